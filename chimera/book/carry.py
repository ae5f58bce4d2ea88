"""Carrying a stopped run or sweep to the next machine: its finished parts, committed under ``results/carried/``.

A sweep of six seeds on iscxvpn takes about eight hours on two cores, and a working session lasts three on a
machine that is not there the next time: the ``.partial`` folder a stopped sweep leaves (chimera.book.resume) is
lost with the machine, and so is its work. ``invoke carry`` copies the finished parts of the stopped runs and
sweeps under ``results/`` into ``results/carried/<folder>/`` (the same layout as under ``results/<folder>/``),
which is committed; on the next machine ``invoke republish`` (and ``--resume`` given that folder) takes them up
as it takes up a stopped run of this machine, under the same check (``same_code``: the code the run depends on
is at its commit what the tree holds now).

What is carried is what a resume reads, and no more: a sweep's manifest and, of each task that completed, its
run's manifest and tables (``read_outcome``); a run's manifest and what its finished units left (``TAKEN``: the
checkpoints, and the compiled models and replays they wrote). A carried folder leaves the tree when the run or
sweep that resumed it is published (``drop_resumed``), or when its code moves on and it can never be resumed
(``prune_carried``): the folder holds work in progress, not evidence, and the book never reads it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from chimera.book.resume import CARRIED as HERE, same_code, stopped_runs, unfinished_folders
from chimera.errors import ResultsError
from chimera.formats.checkpoints import TAKEN, Checkpoints
from chimera.formats.rundir import Manifest
from chimera.report.provenance import ROOT

log = logging.getLogger(__name__)

#: where carried work lies, relative to the checkout (committed: see .gitignore); a resumed run names the folder it
#: resumed by its path on its own machine, which ends in this
CARRIED = HERE.relative_to(ROOT)
#: the most one carried run or sweep may hold (bytes): a carried folder is committed, and a run whose finished
#: units weigh more (captures of a long replay) must be finished on one machine
MAX_BYTES = 8 * 2**20
#: the folders of results/ that hold no run of this machine
KEPT = frozenset({"published", "history", "carried", "baseline"})
#: the most ``results/carried/`` may hold in all (bytes); tests/test_sweep.py checks it
BUDGET_BYTES = 16 * 2**20


#: the carried manifest's section: where and when it was carried from
SECTION = "carried"


class CarryRecord(BaseModel):
    """Where the carried run was when it was carried: its host, process and status there, when, and the finished
    parts (tasks or units) it took along."""
    host: str
    pid: int
    status: str
    carried: str
    parts: list[str]




@dataclass(frozen=True)
class Carried:
    """One carried run or sweep: where it went, the finished parts it holds (tasks or units) and their size."""
    path: Path
    parts: list[str]
    bytes: int


def _results_folder(stopped: Path) -> tuple[Path, Path]:
    """The results folder a stopped run lies in (``results/<name>``) and its path relative to it
    (``.<id>.partial`` or ``.failed/<id>``)."""
    folder = stopped.parent.parent if stopped.parent.name == ".failed" else stopped.parent
    return folder, stopped.relative_to(folder)


def _sweep_files(stopped: Path) -> tuple[list[Path], list[str]]:
    """A stopped sweep's files a resume reads: its manifest, and the manifest and tables of every task's completed
    run (``chimera.sweep.driver.completed_tasks``)."""
    files, tasks = [Path("manifest.json")], []
    for mf in sorted(stopped.glob("work/*/results/*/*/manifest.json")):
        if Manifest.read(mf).status != "complete":
            continue
        run = mf.parent
        tasks.append(run.relative_to(stopped).parts[1])
        files += [p.relative_to(stopped) for p in [mf, *sorted(run.glob("*.csv"))]]
    return files, tasks


def _run_files(stopped: Path) -> tuple[list[Path], list[str]]:
    """A stopped run's files a resume reads: its manifest, and what its finished units left (``TAKEN``)."""
    files = [Path("manifest.json")]
    for name in TAKEN:
        files += [p.relative_to(stopped) for p in sorted((stopped / name).rglob("*")) if p.is_file()]
    return files, Checkpoints(stopped).keys()


def _finished(m: Manifest, stopped: Path) -> tuple[list[Path], list[str]]:
    """The files a resume of ``stopped`` reads, and its finished parts (tasks or units)."""
    return (_sweep_files if m.kind == "sweep" else _run_files)(stopped)


def carry(stopped: Path, base: Path = HERE) -> Carried:
    """Copy the finished parts of the stopped run or sweep at ``stopped`` into ``results/carried/`` (replacing an
    earlier carry of it; ``base``: the carried folder). Refused: a run that is complete (publish it), one with nothing finished, one from
    uncommitted or changed code (``same_code``: it could not be resumed), one over ``MAX_BYTES``."""
    stopped = Path(stopped).resolve()
    mf = stopped / "manifest.json"
    if not mf.is_file():
        raise ResultsError(f"{stopped}: no manifest.json here",
                           "give the .partial or .failed folder of a stopped run or sweep under results/")
    m = Manifest.read(mf)
    if m.status == "complete":
        raise ResultsError(f"{stopped} is complete: there is nothing to carry",
                           f"publish it: invoke publish {stopped}")
    same_code(stopped)
    files, parts = _finished(m, stopped)
    if not parts:
        raise ResultsError(f"{stopped} finished no {'task' if m.kind == 'sweep' else 'unit'} yet: there is nothing "
                           "to carry", "let it run until a task or unit finishes, or start it on the next machine")
    size = sum((stopped / f).stat().st_size for f in files)
    if size > MAX_BYTES:
        raise ResultsError(f"{stopped}: its finished parts weigh {size / 2**20:.1f} MiB, over the {MAX_BYTES / 2**20:.0f}"
                           " MiB a carried run may hold (it is committed)", "finish it on one machine")
    folder, rel = _results_folder(stopped)
    dest = base / folder.name / rel
    total = tree_bytes(base) - tree_bytes(dest) + size    # an earlier carry of it is replaced
    if total > BUDGET_BYTES:
        raise ResultsError(f"results/carried would hold {total / 2**20:.1f} MiB, over its "
                           f"{BUDGET_BYTES / 2**20:.0f} MiB budget", "resume and publish what is carried first, "
                           "or drop the carried folders that are not needed (invoke prune drops the stale ones)")
    if dest.exists():
        shutil.rmtree(dest)
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(stopped / f, dest / f)
    # another machine may reuse this host name and process id: the carried copy names no process, so that no
    # machine takes it for a run still going (chimera.formats.checkpoints.still_running)
    m.put(SECTION, CarryRecord(host=m.host, pid=m.pid, status=m.status, parts=parts,
                               carried=dt.datetime.now().isoformat(timespec="seconds")))
    m.record(pid=0)
    (dest / "manifest.json").write_text(json.dumps(m.to_json(), indent=2, default=str))
    log.info("carried %s -> %s: %d finished %s (%.1f KiB)", stopped, dest, len(parts),
             "task(s)" if m.kind == "sweep" else "unit(s)", size / 1024)
    return Carried(dest, parts, size)


def unfinished_here(results: Path) -> list[Path]:
    """The runs and sweeps under ``results`` (this machine's results/, not the carried, published or archived
    ones) that have not completed, stopped or still running, that finished a part, and whose code is the tree's
    (``same_code``): what the end of a session would lose."""
    return [p for folder in sorted(f for f in results.iterdir() if f.is_dir() and f.name not in KEPT)
            for p in stopped_runs(folder, lambda m, p: bool(_finished(m, p)[1]), carried=None, running=True)]


def tree_bytes(base: Path = HERE) -> int:
    return sum(p.stat().st_size for p in base.rglob("*") if p.is_file()) if base.is_dir() else 0


def _carried_runs(base: Path) -> list[Path]:
    return [p for f in sorted(base.iterdir()) if f.is_dir() for p in sorted(unfinished_folders(f))] \
        if base.is_dir() else []


def _remove(p: Path, base: Path) -> None:
    shutil.rmtree(p)
    for up in (p.parent, p.parent.parent):   # .failed/ and the experiment's folder, once empty
        if up != base and up.is_dir() and not any(up.iterdir()):
            up.rmdir()


def drop_resumed(run_dir: Path, base: Path = HERE) -> list[Path]:
    """Remove the carried folder the run or sweep at ``run_dir`` (just published) resumed (its ``resumed_from``,
    on whichever machine and checkout it ran), or that was carried from it while it ran on (the same run id): its
    parts are now in the published run."""
    published = Manifest.read(run_dir / "manifest.json")
    folder = base / published.experiment
    same = [p for p in (folder / f".{published.run_id}.partial", folder / ".failed" / published.run_id) if p.is_dir()]
    for p in same:
        _remove(p, base)
        log.info("carry: dropped %s, carried while it ran: %s is published", p, published.run_id)
    return same + _drop_resumed_from(published, base)


def _drop_resumed_from(published: Manifest, base: Path) -> list[Path]:
    sw = published.sections.get("sweep") or {}
    came = published.resumed_from or (sw.get("resumed_from") if isinstance(sw, dict) else None)
    if not came:
        return []
    here, mark = Path(came), CARRIED.as_posix() + "/"
    if here.is_relative_to(base):
        p = here
    elif mark in here.as_posix():    # resumed in another checkout: the same folder of this one
        p = base / here.as_posix().split(mark, 1)[1]
    else:
        return []
    if not p.is_dir():
        return []
    _remove(p, base)
    log.info("carry: dropped %s, which the published run %s resumed", p, published.run_id)
    return [p]


def prune_carried(base: Path = HERE) -> list[Path]:
    """Remove the carried folders that can never be resumed: their code moved on since their commit."""
    gone = []
    for p in _carried_runs(base):
        try:
            same_code(p)
        except ResultsError as e:
            log.info("carry: dropping %s: %s", p, e.problem)
            _remove(p, base)
            gone.append(p)
    return gone
