"""The sweep driver: plan the tasks, run them on Ray (or one after another), merge what came back.

- Ray: without an address, a local instance sized to this machine (one testbed);
  with ``HEAD:PORT``, the cluster. Tasks on a switch target request the custom
  resource ``testbed: 1``, which every node advertises exactly once, so two
  testbeds never share a host; reference tasks need one CPU each.
- Failures: a task whose worker or node dies, or which raises anything but a
  ChimeraError, is retried up to ``retries`` times; then it is recorded as failed
  with its error and every other task is still merged.
- Ctrl-C: outstanding tasks are cancelled (their workers killed), then every
  testbed node removes what an interrupted run left (``cleanup_stale``).
- Resume: a sweep killed or stopped part-way (its ``.<run>.partial`` or ``.failed/<run>`` folder) can be given
  as ``resume``: the tasks it completed are taken from it (their run folders copied into the new sweep, marked
  ``reused``) and only the others run. The caller checks first that the code the sweep depends on is the same
  (``invoke sweep --resume``: the sweep's fingerprint at the partial's commit against the working tree's).
- Merge: ``results/sweep-<name>/<run>/``: manifest (every task: node, pid,
  attempts, its own manifest and seed), ``tasks/<task>/*.csv``, the merged tables
  (the tasks' rows concatenated, a ``sweep_task`` column added) and ``summary.csv`` with
  mean and 95% CI across seeds of every metric where seeds vary.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from chimera import paths
from chimera.errors import ConfigError, ResultsError
from chimera.experiments.kinds import kind_of
from chimera.experiments.load import load_experiment
from chimera.formats.rundir import Manifest, RunDir, git_state
from chimera.targets.registry import environment
from chimera.formats.tables import TableSchema
from chimera.metrics.intervals import ci95
from chimera.sweep.plan import SweepTask, plan
from chimera.sweep.task import TaskOutcome, failure, read_outcome, run_task

log = logging.getLogger(__name__)
ROOT = paths.ROOT



class PlannedTask(BaseModel):
    """One task of a sweep's plan, as its manifest records it."""
    model_config = ConfigDict(extra="allow")
    task: str
    # dict[str, Any]: JSON in and out: a task's cell as the sweep manifest records it
    cell: dict[str, Any] = Field(default_factory=dict)
    testbed: bool = False


class SweepRecord(BaseModel):
    """Section ``sweep``: what was planned, then what every task did (its node, attempts, status, error)."""

    model_config = ConfigDict(extra="allow")
    DEFAULT_TARGET: ClassVar[str] = "(the experiment's)"   # what a sweep records that ran on its experiment's target
    experiment: str
    seeds: list[int]
    datasets: list[str] | None = None
    target: str
    executor: str
    ray: str | None = None
    retries: int = 0
    planned_tasks: list[PlannedTask] = Field(default_factory=list)
    resumed_from: str | None = None       # the partial sweep whose completed tasks this one reused
    seconds: float | None = None
    tasks: list[TaskOutcome] = Field(default_factory=list)   # each without its tables
    failed_tasks: list[str] = Field(default_factory=list)
    merged_tables: list[str] = Field(default_factory=list)

def start_ray(address: str | None, num_cpus: int | None = None) -> Any:
    import ray
    if ray.is_initialized():
        return ray
    # dict[str, Any]: library boundary: ray.init's keyword arguments
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address:
        ray.init(address=address, **kw)
    else:
        # address "local": a new instance of its own, never a cluster another process happens to run here. Its
        # workers run at this process's priority: Ray's default (nice 15) put every sweep task below anything else
        # on the machine (a 2-core host running a test suite gave two tasks a few minutes of CPU in half an hour).
        # The raylet adds this value to the niceness its workers inherit from it (this process's), so 0 keeps them
        # at ours: our own niceness here put a niced driver's workers at twice its value
        os.environ.setdefault("RAY_worker_niceness", "0")
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count(), resources={"testbed": 1}, **kw)
    log.info("ray: %d nodes, resources %s", len(ray.nodes()), ray.cluster_resources())
    return ray


def run_ray(tasks: list[SweepTask], target: str, work_root: Path, data_root: Path, address: str | None,
            retries: int, num_cpus: int | None = None) -> list[TaskOutcome]:
    ray = start_ray(address, num_cpus)
    remote = ray.remote(run_task)
    refs = {}
    for t in tasks:
        # dict[str, Any]: library boundary: Ray's task options
        opts: dict[str, Any] = {"num_cpus": 1, "max_retries": retries, "retry_exceptions": True}
        if t.testbed:
            opts["resources"] = {"testbed": 1}
        refs[remote.options(**opts).remote(t, target, str(work_root), str(data_root))] = t
    out: dict[str, TaskOutcome] = {}
    pending = list(refs)
    try:
        with tqdm(total=len(refs), desc="sweep tasks", unit="task") as bar:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    t = refs[ref]
                    try:
                        out[t.name] = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - a task that failed after its retries
                        out[t.name] = failure(t, e)
                        log.error("sweep task %s failed after %d retries: %s", t.name, retries,
                                  out[t.name].last_error(2000))
                    bar.update(1)
    except KeyboardInterrupt:
        log.warning("interrupted: cancelling %d outstanding tasks and cleaning every testbed node", len(pending))
        for ref in pending:
            ray.cancel(ref, force=True)
        clean_testbeds(ray)
        raise
    return [out[t.name] for t in tasks]


def clean_testbeds(ray: Any) -> None:
    """On every node with a testbed, remove what interrupted runs left (their owners are dead now)."""
    from chimera.testbed.topology import cleanup_stale
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("testbed")]
    refs = [ray.remote(cleanup_stale).options(num_cpus=0, resources={"testbed": 1},
                                              scheduling_strategy=_on_node(n["NodeID"])).remote() for n in nodes]
    try:
        ray.get(refs, timeout=120)
    except Exception as e:  # noqa: BLE001 - best effort: the next run on that node cleans up as well
        log.warning("testbed cleanup on a node did not finish (%s); the next run there removes the leftovers", e)


def _on_node(node_id: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)


def run_sequential(tasks: list[SweepTask], target: str, work_root: Path, data_root: Path) -> list[TaskOutcome]:
    """The same tasks, one after another in this process (the reference for the bit-identical check)."""
    from chimera.determinism import single_threaded
    with single_threaded():  # as each Ray task runs; the caller's setting is restored after
        return [run_task(t, target, str(work_root), str(data_root)) for t in tqdm(tasks, desc="tasks", unit="task")]


def merge(outcomes: list[TaskOutcome]) -> dict[str, pd.DataFrame]:
    """Each CSV name: the ok tasks' rows concatenated in plan order, with a ``sweep_task`` column."""
    tables: dict[str, list[pd.DataFrame]] = {}
    for o in outcomes:
        if o.status != "ok":
            continue
        for name, text in o.tables.items():
            df = pd.read_csv(io.StringIO(text))
            df.insert(0, "sweep_task", o.task)
            if "seed" not in df:
                df.insert(1, "seed", o.cell.get("seed"))
            tables.setdefault(name, []).append(df)
    return {n: pd.concat(parts, ignore_index=True) for n, parts in tables.items()}


def summarize(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame | None:
    """Mean and 95% CI (t) across seeds of the table's metric columns, grouped by its key columns."""
    metrics = [c for c in schema.metrics if c in df and pd.api.types.is_numeric_dtype(df[c])]
    if not metrics or df["seed"].nunique() < 2:
        return None
    keys = [c for c in schema.keys if c in df and c != "seed"]
    g = df.groupby(keys, sort=False, dropna=False) if keys else df.groupby(lambda _: "all")
    out = g[metrics].agg(["mean", ci95, "count"])
    out.columns = [f"{m}_{s}" for m, s in out.columns]
    return out.reset_index()


def completed_tasks(partial: Path, tasks: list[SweepTask], experiment: str = "",
                    target: str | None = None) -> dict[str, TaskOutcome]:
    """The tasks of the sweep at ``partial`` (a stopped sweep's folder, or a finished one that this sweep extends
    with more seeds or datasets) that completed, as the outcomes ``run_task`` returned for them, by task name.
    Refused where that sweep planned a task this one does not, or swept another experiment or target."""
    m = Manifest.read(partial / "manifest.json")
    sw = m.get("sweep", SweepRecord)
    if sw is None:
        raise ResultsError(f"{partial} is not a sweep's folder (its manifest has no sweep section)",
                           "give the folder of the sweep to resume or extend")
    planned = [t.task for t in sw.planned_tasks]
    other = sorted(set(planned) - {t.name for t in tasks})
    same = (not experiment or sw.experiment == experiment) and \
        (target is None or sw.target == (target or SweepRecord.DEFAULT_TARGET))
    if other or not same:
        raise ConfigError(f"{partial} planned other tasks ({len(planned)}: {', '.join((other or planned)[:4])}...)"
                          + ("" if same else f", of {sw.experiment} on {sw.target}"),
                          "resume with the experiment, seeds, datasets and target it was started with (more seeds "
                          "or datasets extend it)")
    out: dict[str, TaskOutcome] = {}
    for t in tasks:
        done = [d.parent for d in sorted((partial / "work" / t.name / "results").glob("*/*/manifest.json"))
                if Manifest.read(d).status == "complete"]
        if done:
            out[t.name] = reused_outcome(t, done[-1])
    return out


def reused_outcome(task: SweepTask, run_dir: Path) -> TaskOutcome:
    """What ``run_task`` returned for a task whose run completed, read back from its run folder."""
    return read_outcome(task, run_dir, {"reused": str(run_dir), "attempts": 0})


def sweep(experiment: str, seeds: list[int], datasets: list[str] | None = None, target: str = "",
          address: str | None = None, retries: int = 2, results_root: str | Path = "results",
          data_root: str | Path = "data", executor: str = "ray", num_cpus: int | None = None,
          resume: Path | None = None) -> Path:
    """Run the sweep and write its merged run directory; returns it. ``resume``: a stopped sweep's folder whose
    completed tasks are reused (the caller has checked that the code is the same)."""
    if executor not in ("ray", "sequential"):
        raise ConfigError(f"unknown sweep executor {executor!r}", "use ray or sequential")
    if not seeds:
        raise ConfigError("sweep: no seeds", "pass --seeds 1,2,3")
    tasks = plan(experiment, seeds, datasets, target)
    reused = completed_tasks(Path(resume), tasks, experiment, target) if resume is not None else {}
    kind = kind_of(load_experiment(experiment).kind)
    schemas = {t.name: t for t in kind.tables}
    name = Path(experiment).stem if experiment.endswith((".yaml", ".yml")) else experiment
    with RunDir(results_root, f"sweep-{name}", target or "default") as run:
        work = run.path / "work"
        run.manifest.record(kind="sweep", git=git_state(ROOT), environment=environment())
        record = SweepRecord(experiment=experiment, seeds=seeds, datasets=datasets,
                             target=target or SweepRecord.DEFAULT_TARGET, executor=executor,
                             ray=address or ("local" if executor == "ray" else None), retries=retries,
                             planned_tasks=[PlannedTask(task=t.name, cell=t.cell, testbed=t.testbed) for t in tasks],
                             resumed_from=str(resume) if resume is not None else None)
        run.manifest.put("sweep", record)
        run.write_manifest()   # the commit and the plan on disk before any task: a killed sweep can be resumed
        for name, o in reused.items():   # the completed tasks' folders, copied: the sweep holds every run it merges
            shutil.copytree(Path(resume or "") / "work" / name, work / name)
            o.run_dir = str(work / name / Path(o.run_dir or "").relative_to(Path(resume or "") / "work" / name))
        if reused:
            log.info("resuming %s: %d of %d tasks completed there, %d to run", resume, len(reused), len(tasks),
                     len(tasks) - len(reused))
        todo = [t for t in tasks if t.name not in reused]
        t0 = time.perf_counter()
        ran = (run_ray(todo, target, work, Path(data_root), address, retries, num_cpus) if executor == "ray"
               else run_sequential(todo, target, work, Path(data_root))) if todo else []
        seconds = time.perf_counter() - t0
        by_name = {**reused, **{o.task: o for o in ran}}
        outcomes = [by_name[t.name] for t in tasks]
        merged = merge(outcomes)
        for o in outcomes:
            d = run.path / "tasks" / o.task
            d.mkdir(parents=True, exist_ok=True)
            for n, text in o.tables.items():
                (d / n).write_text(text)
            (d / "outcome.json").write_text(json.dumps(o.model_dump(), indent=1, default=str))
        for n, df in merged.items():
            df.to_csv(run.path / n, index=False)
        summaries = {n: s for n, df in merged.items() if n in schemas and (s := summarize(df, schemas[n])) is not None}
        for n, s in summaries.items():
            s.to_csv(run.path / f"summary-{n}", index=False)
        failed = [o for o in outcomes if o.status != "ok"]
        record = record.model_copy(update={
            "seconds": seconds, "tasks": outcomes,
            "failed_tasks": [o.task for o in failed], "merged_tables": sorted(merged)})
        run.manifest.put("sweep", record)
        (run.path / "report.md").write_text("\n".join(_report(run.manifest, merged, summaries, schemas)))
    log.info("sweep %s: %d tasks (%d failed) in %.1f s -> %s", name, len(tasks), len(failed), seconds, run.final)
    return run.final


def _report(m: Manifest, merged: dict[str, pd.DataFrame], summaries: dict[str, pd.DataFrame],
            schemas: dict[str, TableSchema]) -> list[str]:
    from chimera.report.common import table
    sw = m.get("sweep", SweepRecord)
    if sw is None:
        raise ResultsError(f"run {m.run_id}: no sweep section", "re-run the sweep")
    rows = pd.DataFrame([{"task": t.task, "status": t.status + (" (reused)" if t.reused else ""),
                          "node": t.node[:12], "host": t.host, "attempts": t.attempts,
                          "seconds": ((t.ended or 0) - t.started) if t.started else None, "error": t.last_error()}
                         for t in sw.tasks])
    failed = sw.failed_tasks
    lines = [f"# Sweep: {sw.experiment}", "", f"- seeds {sw.seeds}, target {sw.target}, executor "
             f"{sw.executor} ({sw.ray}), retries {sw.retries}", f"- git `{m.git.commit}`",
             *([f"- resumed from `{sw.resumed_from}`: its completed tasks reused (status 'ok (reused)')"]
               if sw.resumed_from else []),
             f"- {len(rows)} tasks, {len(failed)} failed, {sw.seconds or 0.0:.1f} s", "", "## Tasks", "",
             table(rows, ["attempts"]), ""]
    for n, s in summaries.items():
        lines += [f"## {n}: mean and 95% CI across seeds", "", table(s, schemas[n]), ""]
    for n, df in merged.items():
        lines += [f"## {n} (every task's rows)", "", f"{len(df)} rows: `{n}`", ""]
    lines += ["## Reproduce", "", f"    invoke sweep --name {sw.experiment} --seeds "
              f"{','.join(map(str, sw.seeds))}" + (f" --target {sw.target}" if sw.target[0] != '(' else ""),
              ""]
    return lines
