"""Resuming what was stopped: a run or a sweep cut short (the end of a session, Ctrl-C, a killed process) is
taken up again from its finished parts, never from parts made by other code.

``same_code`` is the check (the stopped folder's scope, as the book judges a published run, at its commit against
the working tree); ``stopped_runs`` finds the stopped runs of an experiment that pass it, on this machine or carried to it from
another (chimera.book.carry); ``run_resuming`` runs an experiment, resuming the newest of them (``invoke
republish``, ``invoke reproduce --resume``).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chimera.errors import ResultsError
from chimera.experiments.config import ExperimentConfig
from chimera.formats.checkpoints import still_running
from chimera.formats.rundir import Manifest
from chimera.report.provenance import ROOT

log = logging.getLogger(__name__)
#: the finished parts of stopped runs carried from other machines (committed; chimera.book.carry)
CARRIED = ROOT / "results" / "carried"


def same_code(partial: Path, root: Path = ROOT) -> None:
    """Refuse to resume the sweep or run stopped at ``partial`` unless the code it depends on (its scope, as the
    book judges a published run's freshness) is at its commit what the working tree holds now: the reused tasks
    or units and the ones still to run must come from the same code. One started from uncommitted code cannot be
    resumed."""
    from chimera.book.scope import scope_of
    from chimera.report.provenance import code_fingerprint, fingerprint_at
    mf = Path(partial) / "manifest.json"
    if not mf.is_file():
        raise ResultsError(f"{partial}: no manifest.json here",
                           "give the .partial or .failed folder of the stopped run or sweep")
    m = Manifest.read(mf)
    what = "sweep" if m.kind == "sweep" else "run"
    if m.git.dirty or not m.git.commit:
        raise ResultsError(f"{partial} was started from uncommitted code (or its manifest never said from which): "
                           f"its finished parts cannot be reused", f"start a new {what} (leave out --resume)")
    scope = scope_of(m)
    then, now = fingerprint_at(m.git.commit, root, scope), code_fingerprint(root, scope)
    if then != now:
        raise ResultsError(f"the code the {what} at {partial} depends on changed since {m.git.commit[:7]}",
                           f"start a new {what} (leave out --resume): its finished parts would mix two versions "
                           "of the code")


def unfinished_folders(folder: Path) -> list[Path]:
    """The folders a results folder keeps for runs that did not complete: ``.<id>.partial`` (killed, or still
    going) and ``.failed/<id>``."""
    return [*folder.glob(".*.partial"), *(folder / ".failed").glob("*")]


def stopped_runs(folder: Path, fits: Callable[[Manifest, Path], bool],
                 carried: Path | None = CARRIED, running: bool = False) -> list[Path]:
    """The stopped runs under an experiment's (or a sweep's) results folder that ``fits`` and that were made from
    the code the working tree holds now (``same_code``), newest first: a killed run's ``.<id>.partial`` whose
    process is gone, a failed one's ``.failed/<id>``; also those carried from another machine under ``carried``
    (``results/carried/<the folder's name>``, chimera.book.carry); ``running``: also those still going here."""
    where = [folder] + ([carried / folder.name] if carried is not None else [])
    found = [p for f in where for p in unfinished_folders(f)]
    out = []
    for p in sorted(found, key=lambda q: q.name.lstrip("."), reverse=True):
        try:
            m = Manifest.read(p / "manifest.json")
            if m.status == "complete" or (not running and still_running(m, socket.gethostname())) or not fits(m, p):
                continue
            same_code(p)
        except (ResultsError, OSError) as e:
            log.debug("republish: %s is not resumable here: %s", p, e)
            continue
        out.append(p)
    return out


def run_resuming(cfg: ExperimentConfig, target: str, stopped_in: Path, results_root: Path, **options: Any) -> Path:
    """Run ``cfg`` on ``target`` into ``results_root``; where ``stopped_in`` holds a stopped run of it made from
    the code the tree holds now, with finished units, that run is resumed (the newest that fits)."""
    from chimera.experiments.runner import run_experiment
    from chimera.formats.checkpoints import Checkpoints, NotResumable
    for stopped in stopped_runs(Path(stopped_in) / cfg.name,
                                lambda m, p: m.target == target and bool(Checkpoints(p).keys())):
        try:
            return run_experiment(cfg, target=target, results_root=results_root, resume=stopped, **options)
        except NotResumable as e:
            log.info("not resuming %s: %s", stopped, e.problem)
    return run_experiment(cfg, target=target, results_root=results_root, **options)
