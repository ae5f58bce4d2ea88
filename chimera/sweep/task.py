"""One sweep task, run where it lands (in-process, or in a Ray worker on any node).

A task is one ordinary experiment run (the runner, its RunDir, its manifest)
into the node's own work directory; it returns its tables and manifest as text
so the driver can merge them wherever it runs. Torch runs single-threaded in a
task: a worker owns one CPU, and the sequential path uses the same setting, so
both give bit-identical tables.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import traceback
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from chimera.errors import ChimeraError
from chimera.sweep.plan import SweepTask

PIDS_FILE = "attempts.jsonl"
#: what a sweep keeps of a task run's manifest (enough to find and join the run)
MANIFEST_KEYS = ("run_id", "target", "seed", "git", "timings_s", "dataset", "datasets", "target_detail", "clock")


class TaskOutcome(BaseModel):
    """What one task returned: the driver merges its tables, the sweep's manifest and ``tasks/<task>/outcome.json``
    record the rest (without the tables). Older sweeps' records read with the same model."""

    model_config = ConfigDict(extra="allow")
    task: str
    cell: dict[str, Any] = Field(default_factory=dict)   # the plan's cell: the override values this task fixes
    status: Literal["ok", "failed"] = "failed"
    pid: int | None = None
    host: str | None = None
    node: str = "?"
    started: float | None = None
    ended: float | None = None
    attempts: int = 0
    run_dir: str | None = None
    reused: str | None = None                              # the resumed sweep's run this task's outcome came from
    # CSV name -> its text: carried to the driver, never written with the record (they are the sweep's merged CSVs)
    tables: dict[str, str] = Field(default_factory=dict, exclude=True)
    manifest: dict[str, Any] = Field(default_factory=dict)  # MANIFEST_KEYS of the run's manifest JSON (I/O)
    error: str | None = None

    def last_error(self, width: int = 120) -> str:
        """The error's last line (its message), or ""."""
        return (self.error or "").splitlines()[-1][:width] if self.error else ""


KILL_ENV = "CHIMERA_SWEEP_KILL_DIR"
"""Fault injection, for the retry tests: where this names a folder that holds a file named as the task, the
worker running that task's first attempt SIGKILLs itself right after recording the attempt. To Ray that is an
OOM kill or a lost node (a real crash), at a known point, so the check never races the task. A worker's
environment is its raylet's, so the variable is set before Ray starts; the file says which task, and when."""


def run_task(task: SweepTask, target: str, work_root: str, data_root: str) -> TaskOutcome:
    """Run ``task``; a ChimeraError (bad data, a refused config) is returned as a failure (retrying cannot help);
    anything else propagates, so Ray retries it (a killed worker, a lost node, an OOM)."""
    import torch

    torch.set_num_threads(1)
    # Ray workers run with SIGINT blocked; a blocked mask is inherited through exec, and the testbed stops
    # tcpdump/tcpreplay with SIGINT: unblock it for the task (restored after), or every capture is killed.
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        return _run(task, target, Path(work_root), data_root)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _run(task: SweepTask, target: str, work_root: Path, data_root: str) -> TaskOutcome:
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment

    here = Path(work_root) / task.name
    here.mkdir(parents=True, exist_ok=True)
    attempt = {"pid": os.getpid(), "host": socket.gethostname(), "node": _node_id(), "started": time.time()}
    with open(here / PIDS_FILE, "a") as f:  # one line per attempt: which process ran it (a retry adds a line)
        f.write(json.dumps(attempt) + "\n")
    base = {"task": task.name, "cell": task.cell, **attempt, "attempts": _attempts(here)}
    kill = os.environ.get(KILL_ENV)
    if kill and (Path(kill) / task.name).is_file() and base["attempts"] == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        cfg = load_experiment(task.experiment, task.overrides)
        out = run_experiment(cfg, target=target or None, results_root=here / "results", data_root=data_root,
                             experiment_file=task.experiment)
    except ChimeraError as e:
        return TaskOutcome.model_validate({**base, "status": "failed", "error": str(e), "ended": time.time()})
    return read_outcome(task, out, {**base, "ended": time.time()})


# dict[str, Any]: JSON out: extra fields of the task's outcome record
def read_outcome(task: SweepTask, run_dir: Path, more: dict[str, Any] | None = None) -> TaskOutcome:
    """A completed task's outcome, read from its run folder (its tables and manifest); ``more``: the attempt's
    facts (pid, host, node, times, attempts) where it ran just now."""
    from chimera.formats.rundir import Manifest
    m = Manifest.read(run_dir / "manifest.json").to_json()
    return TaskOutcome.model_validate({"task": task.name, "cell": task.cell, **(more or {}), "status": "ok",
                                       "run_dir": str(run_dir),
                                       "tables": {p.name: p.read_text() for p in sorted(run_dir.glob("*.csv"))},
                                       "manifest": {k: m[k] for k in MANIFEST_KEYS}})


def _attempts(here: Path) -> int:
    try:
        return len((here / PIDS_FILE).read_text().splitlines())
    except OSError:
        return 1


def _node_id() -> str:
    try:
        import ray
        if ray.is_initialized():
            return str(ray.get_runtime_context().get_node_id())
    except Exception:  # noqa: BLE001 - outside Ray, or Ray without a runtime context
        pass
    return "local"


def failure(task: SweepTask, err: BaseException) -> TaskOutcome:
    """The record of a task that failed after its retries."""
    return TaskOutcome(task=task.name, cell=task.cell, status="failed", node="?",
                       error="".join(traceback.format_exception_only(type(err), err)).strip()[-2000:])
