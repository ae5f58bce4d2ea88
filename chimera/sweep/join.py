"""A one-seed sweep of a multi-dataset experiment, joined back into the experiment's own run.

A multi-dataset kind (accuracy, input_scale, ...) treats its datasets independently, and torch trains on one
thread (chimera.determinism), so the experiment's run is its datasets' runs side by side. A sweep runs them as
parallel tasks, one per dataset (``invoke sweep --name accuracy --seeds 1``): on 2 cores Table 1 takes the
time of its largest dataset instead of the sum. ``join`` writes the run ``invoke run-experiment`` would have
written, ``results/<experiment>/<run-id>/``: every table the tasks' rows in the experiment's dataset order, the
manifest's config with every dataset, the datasets' records, timings and artifacts together, and the kind's
report rendered from them. The tables are bit-identical with a plain run's (a test checks it), so the book
cites the joined run like any other; its ``joined`` section says which sweep and tasks made it.

Refused, with the reason: a sweep over several seeds or over a kind's cells (those are not one run), a failed
task, tasks made at different commits, and task runs that are not on this machine (a sweep on a multi-node
cluster keeps them on the nodes that ran them).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict

from chimera.errors import ResultsError
from chimera.experiments.kinds import kind_of
from chimera.formats.rundir import Manifest, RunDir
from chimera.sweep.driver import SweepRecord
from chimera.sweep.task import TaskOutcome

#: read a table's floats back to the last bit: pandas from 3.1 reads every float round-trip (and deprecates the
#: argument), an older one must be asked
# dict[str, Any]: library boundary: DataFrame.to_csv's keyword arguments
EXACT_FLOATS: dict[str, Any] = ({} if tuple(int(x) for x in pd.__version__.split(".")[:2]) >= (3, 1)
                                else {"float_precision": "round_trip"})

log = logging.getLogger(__name__)


class JoinRecord(BaseModel):
    """Section ``joined``: the sweep whose tasks made this run, and each task's own run id."""

    model_config = ConfigDict(extra="forbid")
    sweep_run: str
    executor: str
    seconds: float | None = None
    tasks: dict[str, str]        # dataset -> the task run's id


def _tasks(sweep_dir: Path) -> tuple[SweepRecord, list[TaskOutcome]]:
    """The sweep's record and its tasks' outcomes, in plan order."""
    m = Manifest.read(sweep_dir / "manifest.json")
    sw = m.get("sweep", SweepRecord) if m.kind == "sweep" else None
    if m.status != "complete" or sw is None:
        raise ResultsError(f"{sweep_dir} is not a finished sweep (kind {m.kind}, status {m.status})",
                           "give a results/sweep-<name>/<run-id> directory of a finished sweep")
    outcomes = []
    for t in sw.planned_tasks:
        p = sweep_dir / "tasks" / t.task / "outcome.json"
        if not p.is_file():
            raise ResultsError(f"{sweep_dir}: task {t.task} left no outcome", "re-run the sweep")
        outcomes.append(TaskOutcome.model_validate_json(p.read_text()))
    return sw, outcomes


def joinable(experiment: str, seeds: list[int]) -> None:
    """Refuse a sweep ``--join`` cannot join before its tasks run (they may take hours)."""
    if len(seeds) != 1:
        raise ResultsError(f"sweep of {experiment} over seeds {seeds}: a run has one seed",
                           "join a one-seed sweep (invoke sweep --seeds N); several seeds stay a sweep")
    cfg = _experiment(experiment, seeds[0])
    kind = kind_of(cfg.kind)
    if not kind.multi_dataset:
        raise ResultsError(f"{experiment} (kind {kind.name}) has one dataset: there is nothing to join",
                           "run it with invoke run-experiment")
    if [c for c in kind.cells(cfg) if c.override]:
        raise ResultsError(f"sweep of {experiment} splits the experiment by {kind.name} cells, not only by dataset",
                           "its cells are no single run: cite the sweep itself (leave out --join)")


def _check(sw: SweepRecord, outcomes: list[TaskOutcome]) -> None:
    exp = sw.experiment
    joinable(exp, list(sw.seeds))
    if any(set(o.cell) - {"dataset", "seed"} for o in outcomes):
        raise ResultsError(f"sweep of {exp} splits the experiment by cells, not only by dataset",
                           "its cells are no single run: cite the sweep itself")
    bad = [f"{o.task}: {o.status} ({o.last_error(2000) or 'no error recorded'})" for o in outcomes if o.status != "ok"]
    if bad:
        raise ResultsError(f"{len(bad)} task(s) of the sweep did not finish: {'; '.join(bad)}",
                           "re-run the sweep; a joined run needs every dataset")
    commits = {o.manifest["git"].get("commit") for o in outcomes}
    if len(commits) != 1:
        raise ResultsError(f"the sweep's tasks were made at {len(commits)} commits", "re-run the sweep from one tree")


def _experiment(experiment: str, seed: int) -> Any:
    from chimera.experiments.load import load_experiment
    return load_experiment(experiment, {"seed": seed})


def _task_run(sweep_dir: Path, o: TaskOutcome) -> Path:
    """The task's run, under the sweep's ``work/`` (its recorded path names the sweep's unfinished directory)."""
    found = sorted((sweep_dir / "work" / o.task / "results").glob(f"*/{o.manifest['run_id']}/manifest.json"))
    if not found:
        raise ResultsError(f"task {o.task}: its run directory is not under {sweep_dir / 'work'} on this machine",
                           "join a sweep whose tasks ran here (a local Ray instance or --sequential)")
    return found[0].parent


def join(sweep_dir: Path, results_root: str | Path = "results") -> Path:
    """Write the experiment's run from the one-seed sweep at ``sweep_dir``; returns the run directory."""
    from chimera.experiments.render import render

    sweep_dir = Path(sweep_dir)
    sw, outcomes = _tasks(sweep_dir)
    _check(sw, outcomes)
    order = list(_experiment(sw.experiment, sw.seeds[0]).named_datasets())
    by_ds = {o.cell["dataset"]: o for o in outcomes}
    missing = [d for d in order if d not in by_ds]
    if missing:
        raise ResultsError(f"the sweep has no task for dataset(s) {missing} of {sw.experiment}",
                           "sweep every dataset of the experiment (leave out --datasets)")
    runs = [(d, _task_run(sweep_dir, by_ds[d])) for d in order]
    mans = [Manifest.read(p / "manifest.json") for _, p in runs]
    first = mans[0]
    sections = dict(first.sections)
    for (d, _), m in zip(runs, mans):
        diff = [k for k in set(sections) | set(m.sections) if sections.get(k) != m.sections.get(k)]
        if diff:
            raise ResultsError(f"task {d}'s manifest sections {diff} differ from the first task's",
                               "those kinds record per-run state: cite the sweep itself")
    config = dict(first.config)
    config["datasets"] = {d: m.config["datasets"][d] for (d, _), m in zip(runs, mans)}
    with RunDir(results_root, first.experiment, first.target) as run:
        man = run.manifest
        man.started = min(m.started for m in mans)  # when the work began: the tasks', not this join's
        man.record(kind=first.kind, config=config, seed=first.seed, git=first.git, environment=first.environment,
                   target_detail=first.target_detail, target_requested=first.target_requested,
                   target_reason=first.target_reason, target_fallback=first.target_fallback, clock=first.clock,
                   dataset=first.dataset, dataset_override=first.dataset_override)
        for m in mans:
            man.datasets.update(m.datasets)
            man.variant_targets.update(m.variant_targets)
            man.variant_fallbacks.update(m.variant_fallbacks)
            man.replay_plans.update(m.replay_plans)
            man.timings_s.update(m.timings_s)
        man.sections.update(sections)
        man.put("joined", JoinRecord(sweep_run=sweep_dir.name, executor=sw.executor, seconds=sw.seconds,
                                     tasks={d: m.run_id for (d, _), m in zip(runs, mans)}))
        (run.path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        names = sorted({p.name for _, r in runs for p in [*r.glob("*.csv"), *r.glob("*.csv.gz")]})
        for n in names:  # round-trip floats: the joined table holds the tasks' values to the last bit
            parts = [pd.read_csv(r / n, **EXACT_FLOATS) for _, r in runs if (r / n).is_file()]
            pd.concat(parts, ignore_index=True).to_csv(run.path / n, index=False,
                                                       compression="gzip" if n.endswith(".gz") else None)
        for _, r in runs:
            for a in sorted((r / "artifacts").glob("*")):
                if a.is_file():
                    shutil.copy2(a, run.path / "artifacts" / a.name)
        run.write_manifest()
        render(run.path, allow_unfinished=True)
    log.info("joined %d task runs of %s into %s", len(runs), sweep_dir, run.final)
    return run.final
