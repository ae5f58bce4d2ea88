"""A sweep's tasks: an experiment's variants (or grid cells) x seeds x datasets, each a config override.

Every task is one end-to-end run of the same experiment restricted to one cell,
so a task's tables are exactly the rows the whole experiment would write for
that cell: merging the tasks gives the experiment's tables (bit-identical; a
test checks it), and a cell can run on any node.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chimera.errors import ConfigError
from chimera.experiments.config import ExperimentConfig
from chimera.experiments.kinds import kind_of
from chimera.experiments.load import load_experiment
from chimera.experiments.stages.compile import slug
from chimera.targets.base import Capability
from chimera.targets.registry import AUTO, target_class


@dataclass(frozen=True)
class SweepTask:
    name: str                        # unique, file-name safe
    experiment: str                  # the experiment's name or YAML path
    seed: int
    # dict[str, Any]: YAML overlay: experiment overrides, validated by load_experiment
    overrides: dict[str, Any] = field(default_factory=dict, hash=False)
    testbed: bool = False            # needs its node's one testbed (Mininet names and BMv2 cores are host-wide)
    cell: dict[str, Any] = field(default_factory=dict, hash=False)  # what this task fixes (for the merge)


# dict[str, Any]: YAML overlay: experiment overrides, validated by load_experiment
def _dataset_overrides(cfg: ExperimentConfig, datasets: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(name, override) per dataset asked for: a name of the experiment's own datasets, or a dataset path."""
    out = []
    multi = kind_of(cfg.kind).multi_dataset
    own = cfg.named_datasets() if multi else {}
    for d in datasets:
        if d in own:
            out.append((d, {"datasets": {d: own[d].model_dump(mode="json")}}))
            continue
        p = Path(d).expanduser()
        if not p.exists():
            raise ConfigError(f"sweep --datasets: {d!r} is neither one of {sorted(own) or 'the experiment datasets'} "
                              f"nor an existing path", "pass dataset names from the YAML or dataset directories")
        # dict[str, Any]: YAML overlay: a dataset spec, validated by load_experiment
        spec: dict[str, Any] = {"path": str(p), "synthetic": None}
        out.append((p.name, {"datasets": {p.name: spec}} if multi else {"dataset": spec}))
    return out


def plan(experiment: str, seeds: list[int], datasets: list[str] | None, target: str) -> list[SweepTask]:
    """Every task of the sweep; each task's config is validated here, before any work is dispatched."""
    cfg = load_experiment(experiment)
    kind = kind_of(cfg.kind)
    if datasets:
        data = _dataset_overrides(cfg, datasets)
    elif kind.multi_dataset:
        data = [(n, {"datasets": {n: s.model_dump(mode="json")}}) for n, s in cfg.named_datasets().items()]
    else:
        data = [("", {})]
    if kind.first_dataset_only:
        data = data[:1]
    name = target or cfg.target
    testbed = name == AUTO or target_class(name).can(Capability.TESTBED)  # auto may choose a testbed
    tasks = []
    for seed, (dname, dover), c in itertools.product(seeds, data, kind.cells(cfg)):
        label, over, cell = c.label, c.override, c.fixes
        name = "-".join(x for x in (f"seed{seed}", slug(dname) if dname else "", label) if x)
        overrides = {**dover, **over, "seed": seed}
        load_experiment(experiment, overrides)  # a bad cell fails now, not on a remote node
        tasks.append(SweepTask(name, experiment, seed, overrides, testbed,
                               {**cell, **({"dataset": dname} if dname else {}), "seed": seed}))
    if len({t.name for t in tasks}) != len(tasks):
        raise ConfigError(f"sweep {experiment}: two tasks would share a name", "give variants unique names")
    return tasks
