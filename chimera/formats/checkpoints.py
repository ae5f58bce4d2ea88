"""Checkpoints: the finished units of a long run, kept in its run directory until the run completes.

A stability run on a switch replays one day per training seed and day realization, minutes each, and a run of
10 seeds x 3 days outlives a working session; a reference run of the factorial days takes about as long as a
session. A run stopped part-way (killed, Ctrl-C, the machine taken back) keeps its finished units here, and
``invoke run-experiment --resume <its folder>`` redoes only the others (chimera.experiments.runner):

    checkpoints/<unit>.pkl   one finished unit: its key, the kind's own result object, and the stage timings it took

The files are pickles: a unit holds the kind's own objects (tables with their dtypes, rows), and a resumed run
must rebuild exactly what the stopped one computed, bit for bit, which a text form would not guarantee. They are
read only from a stopped run of the same experiment, target, configuration and committed code (the runner checks
the first three; ``invoke run-experiment --resume`` and ``invoke republish`` check the code), and removed when the
run completes: a published run holds none.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from chimera.errors import ResultsError
from chimera.formats.rundir import Manifest

log = logging.getLogger(__name__)
T = TypeVar("T")

#: the folder of a run directory that holds its checkpoints
FOLDER = "checkpoints"
SUFFIX = ".pkl"
KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Unit(Generic[T]):
    """One finished unit of work: its key, what it produced, and the seconds it spent per stage (added back to the
    resumed run's timings, so that its manifest says what the whole run cost)."""
    key: str
    value: T
    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Checkpoints:
    """The checkpoints of the run directory ``run_path``."""
    run_path: Path

    @property
    def folder(self) -> Path:
        return self.run_path / FOLDER

    def path(self, key: str) -> Path:
        if not KEY_RE.fullmatch(key):
            raise ValueError(f"checkpoint key {key!r}: letters, digits, '.', '_' and '-' only")
        return self.folder / f"{key}{SUFFIX}"

    def keys(self) -> list[str]:
        return sorted(p.name.removesuffix(SUFFIX) for p in self.folder.glob(f"*{SUFFIX}")) if self.folder.is_dir() \
            else []

    def get(self, key: str, kind: type[T]) -> Unit[T] | None:
        """The unit ``key`` a stopped run finished, or None; a file that does not hold a ``kind`` is refused."""
        p = self.path(key)
        if not p.is_file():
            return None
        try:
            unit = pickle.loads(p.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as e:
            raise ResultsError(f"{p}: a damaged checkpoint ({type(e).__name__}: {e})",
                               f"delete {p} and resume again: that unit is then redone") from None
        if not isinstance(unit, Unit) or unit.key != key or not isinstance(unit.value, kind):
            raise ResultsError(f"{p}: not a checkpoint of {kind.__name__} {key!r}",
                               f"delete {p} and resume again: that unit is then redone")
        return unit

    def put(self, unit: Unit[T]) -> Path:
        """Write ``unit`` atomically: a run killed while writing leaves the previous state, never half a file."""
        p = self.path(unit.key)
        p.parent.mkdir(exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_bytes(pickle.dumps(unit, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, p)
        return p

    def clear(self) -> None:
        """The run completed: its checkpoints go (its tables hold everything they held)."""
        shutil.rmtree(self.folder, ignore_errors=True)


#: what a resumed run takes from the stopped one: the checkpoints, and the files its finished units wrote (the
#: compiled models, the replays' captures and plans), which the resumed run's folder must hold as an unstopped
#: run's would
TAKEN = (FOLDER, "artifacts", "replay")


def still_running(m: Manifest, host: str) -> bool:
    """Whether the run of manifest ``m`` is still going: running, on this host, its process alive."""
    return m.status == "running" and m.host == host and bool(m.pid) and _alive(m.pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class NotResumable(ResultsError):
    """The folder given to resume is not a stopped run of this experiment, target, configuration and code."""


def resumable(stopped: Path, experiment: str, target: str, config: dict[str, object], host: str) -> None:
    """Refuse ``stopped`` unless it is a stopped run of the same experiment, target and configuration. The caller
    checks its code: committed, and the same now (a fingerprint needs the book's scope: ``same_code``)."""
    mf = Path(stopped) / "manifest.json"
    if not mf.is_file():
        raise NotResumable(f"--resume {stopped}: no manifest.json there",
                           "give the folder of the stopped run: results/<experiment>/.<run-id>.partial or "
                           "results/<experiment>/.failed/<run-id>")
    m = Manifest.read(mf)
    fix = "run it afresh (leave out --resume)"
    if m.status == "complete":
        raise NotResumable(f"--resume {stopped}: that run completed", "there is nothing to resume")
    if still_running(m, host):
        raise NotResumable(f"--resume {stopped}: the run is still going (pid {m.pid})",
                           "wait for it, or stop it first (Ctrl-C keeps its checkpoints)")
    if (m.experiment, m.target) != (experiment, target):
        raise NotResumable(f"--resume {stopped}: a run of {m.experiment} on {m.target}, not of {experiment} on "
                           f"{target}", f"resume with --name {m.experiment} --target {m.target}, or {fix}")
    if m.config != config:
        keys = sorted(k for k in {*m.config, *config} if m.config.get(k) != config.get(k))
        raise NotResumable(f"--resume {stopped}: its configuration differs from this one in {', '.join(keys)}",
                           f"resume with the options it was started with, or {fix}")


def take_over(stopped: Path, new_path: Path) -> list[str]:
    """Copy what the stopped run's finished units left into the new run's folder (checked first with
    ``resumable``); returns the keys of its checkpoints."""
    for name in TAKEN:
        src = Path(stopped) / name
        if src.is_dir():
            shutil.copytree(src, new_path / name, dirs_exist_ok=True)
    keys = Checkpoints(new_path).keys()
    log.info("resume: %d finished units taken from %s: %s", len(keys), stopped, ", ".join(keys) or "none")
    return keys
