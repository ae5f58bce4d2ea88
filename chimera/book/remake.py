"""How a published run is made again: the command that remakes it, and how long that will take (its own wall
time, scaled to the experiment as committed now).

A published run's wall time is the only measured time there is for its experiment on this machine, but the
experiment may have grown since (stability24h went from 3 training seeds on one day to 10 seeds on 3 days: its
last run's 31 minutes said nothing of the next one's hours). The work a run does is counted in its kind's own
unit: its cells (chimera.experiments.kinds.base.Cell) times how often it does each (``repeats``: datasets, and
for the day-long kinds their training seeds, day realizations and configurations). The estimate is the run's
minutes times the ratio of that count now to the count in the config the run was made with.

The count lives here, not on the configs, because every run imports chimera.experiments.config: a method added
there would stale every published run (chimera.report.provenance) for a change to no number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chimera.errors import ConfigError
from chimera.experiments.config import ExperimentConfig
from chimera.experiments.kinds import kind_of
from chimera.experiments.kinds.cadence.config import CadenceExperiment
from chimera.experiments.kinds.stability.config import StabilityExperiment
from chimera.experiments.load import load_experiment, validate_experiment
from chimera.report.runs import Run
from chimera.sweep.driver import SweepRecord


def _day_replays(cfg: StabilityExperiment) -> int:
    """Replays of the day: every switch configuration with every training seed, the oracle with its own seeds,
    on every day realization."""
    st, seeds = cfg.stability, len(cfg.training_seeds)
    oracle = min(st.oracle_seeds or seeds, seeds)
    return len(cfg.day_seeds) * (seeds * len(st.switch_configurations) + oracle * len(st.oracle_configurations))


def _cadence_days(cfg: CadenceExperiment) -> int:
    """Each cell (eta, T_cp) runs the day with every training seed on every day realization."""
    return len(cfg.day_seeds) * len(cfg.training_seeds)


#: how many times a run does each of its cells, by config type (the most derived match wins); other kinds:
#: once per dataset
REPEATS: dict[type[ExperimentConfig], Callable[[Any], int]] = {CadenceExperiment: _cadence_days,
                                                              StabilityExperiment: _day_replays}


def repeats(cfg: ExperimentConfig) -> int:
    """How many times a run of ``cfg`` does each of its cells (``REPEATS``; else once per dataset)."""
    for t in type(cfg).__mro__:
        if t in REPEATS:
            return REPEATS[t](cfg)
    return len(cfg.named_datasets()) if cfg.multi_dataset else 1


def work(cfg: ExperimentConfig) -> int:
    """The units of work a run of ``cfg`` does: its kind's cells times each cell's repeats."""
    return len(kind_of(cfg.kind).cells(cfg)) * repeats(cfg)


@dataclass(frozen=True)
class Expected:
    """A published run's wall time scaled to its experiment now."""

    took_min: float          # the published run's own wall time (nan: it has no finish time)
    then: int | None         # units of work of the config it was made with (None: that config no longer loads)
    now: int | None          # units of work of the experiment as committed now (None: it does not load)
    unit: str = "units of work now"   # what then and now count (a sweep: its tasks run, of all it remakes)

    @property
    def scale(self) -> float:
        return self.now / self.then if self.now is not None and self.then else 1.0

    @property
    def minutes(self) -> float:
        return self.took_min * self.scale

    def why_scaled(self) -> str:
        """Why the estimate is not the run's own minutes, in words for a reader."""
        if self.unit == "tasks":
            return f"it ran {self.then} of its {self.now} tasks, resuming a stopped sweep"
        return f"the experiment now does {self.scale:.1f}x its work"

    def note(self) -> str:
        """What the estimate rests on, for the plan's line."""
        if math.isnan(self.took_min):
            return "no measured time"
        if self.then is None or self.now is None:
            return f"its own {self.took_min:.1f} min, unscaled: its config cannot be compared with the experiment now"
        if self.then == self.now:
            return f"its own {self.took_min:.1f} min"
        return f"its own {self.took_min:.1f} min x {self.now}/{self.then} {self.unit}"


def expected(run: Run, overrides: dict[str, Any] | None = None  # YAML overlay: validated by load_experiment
             ) -> Expected:
    """``run``'s wall time scaled by its experiment's work now (``overrides`` applied, as the remake applies
    them) against the work of the config it was made with."""
    took = run.minutes()
    if run.manifest.kind == "sweep":   # remade from its own record (its seeds and datasets), not the YAML's lists
        # a sweep that resumed a stopped one ran only the tasks it did not reuse in its wall time: the remake runs
        # every task (the ciciot sweep's 31 minutes were 2 of its 6 tasks)
        sw = run.manifest.get("sweep", SweepRecord)
        ran = sum(1 for t in sw.tasks if not t.reused) if sw is not None else 0
        return Expected(took, ran, len(sw.tasks), "tasks") if sw is not None and ran else Expected(took, 1, 1)
    try:
        then: int | None = work(validate_experiment(dict(run.manifest.config), run.rel))
    except ConfigError:
        then = None
    try:
        now: int | None = work(load_experiment(run.experiment, overrides))
    except ConfigError:
        now = None
    return Expected(took, then, now)


def remake(experiment: str, target: str = "") -> str | None:
    """How a run that is not an experiment is remade (then `invoke publish RUN_DIR`): the fuzzer over every
    registered target, the mutation run over every target's mutant source (the registries name them), a
    reproduction as it was run (its target is quick or full)."""
    from chimera.fuzz.mutants import sources
    from chimera.targets.base import Capability
    from chimera.targets.registry import TARGETS, target_class
    fuzzed = [n for n in TARGETS if target_class(n).can(Capability.TRACE_CLOCK)]   # not the compile-only tofino
    return {"nightly": "invoke nightly", "fuzz": f"invoke fuzz --targets {','.join(fuzzed)} --budget 10m",
            "mutate": f"invoke mutate --files {','.join(sources())}", "fresh-check": "scripts/fresh-check",
            "vm-boot": "scripts/vm-boot", "vagrant-up": "scripts/vagrant-up",
            "reproduce": "invoke reproduce" + (" --quick" if target == "quick" else "")}.get(experiment)


def sweep_command(sw: SweepRecord) -> str:
    """The command line that makes the sweep ``sw`` records, by hand."""
    parts = [f"invoke sweep --name {sw.experiment} --seeds {','.join(map(str, sw.seeds))}"]
    if sw.datasets:
        parts.append(f"--datasets {','.join(sw.datasets)}")
    if sw.target != SweepRecord.DEFAULT_TARGET:
        parts.append(f"--target {sw.target}")
    if sw.executor == "sequential":
        parts.append("--sequential")
    return " ".join(parts)
