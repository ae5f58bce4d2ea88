"""The results layout: ``results/<experiment>/<run-id>/``, written atomically.

    manifest.json   git commit, config, seeds, tool and package versions, dataset and artifact hashes, timings
    config.yaml     the resolved experiment configuration
    *.csv           tidy tables (one row per packet / flow / class / metric)
    figures/        PNG and PDF
    artifacts/      compiled table artifacts and the constants header
    report.md       the human-readable report

A run is built in ``results/<experiment>/.<run-id>.partial`` and renamed when
complete; its manifest is written at the start (status ``running``, with the
pid) and rewritten at the end, so even a SIGKILLed run leaves a manifest that
says what it was. A failed run is moved to ``results/<experiment>/.failed/<run-id>``
(kept for debugging, never mistaken for a result); finished runs are never
overwritten: a run id that exists gets a numeric suffix. An experiment name must
be a plain name: it can never write outside the results root.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import logging
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from importlib import metadata
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from chimera.errors import ResultsError, disk_full_message

log = logging.getLogger(__name__)
S = TypeVar("S", bound=BaseModel)

PACKAGES = ("numpy", "pandas", "torch", "numba", "scikit-learn", "scapy", "dpkt", "seaborn", "matplotlib",
            "pydantic", "invoke")
#: the testbed's own tools; each target adds its own (Target.tools, gathered by targets.registry.environment)
TOOLS: dict[str, tuple[str, ...]] = {"tcpreplay": ("tcpreplay", "-V"), "mininet": ("mn", "--version")}


def _first_line(cmd: Sequence[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = (r.stdout or r.stderr).strip().splitlines()
    return out[0] if out else ""


# dict[str, Any]: JSON out: the manifest's environment record
def environment(tools: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Versions of everything that can change a result: ``tools`` are the targets' (with the testbed's own)."""
    pk: dict[str, str | None] = {}
    for p in PACKAGES:
        try:
            pk[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pk[p] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "kernel": platform.release(),
            "cpu": cpu(), "packages": pk,
            "tools": {k: _first_line(v) for k, v in {**TOOLS, **(tools or {})}.items()}}


#: the CPU flags that decide which float kernels run (chimera's package docstring: the pins)
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_fp16", "amx_tile")


# dict[str, Any]: JSON out: the manifest's environment record
def cpu() -> dict[str, Any]:
    """The CPU and the float pins a run ran under: two runs whose floats differ can then be told apart by machine
    (before this, a reference run made elsewhere differed in 19 of 120 rows and no record said what the CPUs were).
    ``blas`` is each loaded BLAS's kernel family as threadpoolctl reads it: where it is not the pinned one, numpy
    loaded before chimera and the pin came too late."""
    from chimera import CPU_ISA, PIN_VARS, cpuinfo
    model, flags = cpuinfo()
    blas: dict[str, str | None] = {}
    try:
        from threadpoolctl import threadpool_info
        blas = {Path(i["filepath"]).name: i.get("architecture") for i in threadpool_info() if i["user_api"] == "blas"}
    except Exception:  # noqa: BLE001  a missing or failing introspection leaves the record without it
        pass
    return {"model": model, "count": os.cpu_count(), "isa": [f for f in ISA_FLAGS if f in flags],
            "pinned": CPU_ISA, "pins": {v: os.environ.get(v) for v in PIN_VARS}, "blas": blas}


def git_state(root: Path) -> GitState:
    def run(*a: str) -> str | None:
        try:
            r = subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, timeout=10)
            return r.stdout.strip() if r.returncode == 0 else None
        except OSError:
            return None
    # results/ is where runs land and are published: its files say nothing of the code that made a run
    return GitState(commit=run("rev-parse", "HEAD"),
                    dirty=bool(run("status", "--porcelain", "--", ".", ":(exclude)results")))


class GitState(BaseModel):
    model_config = ConfigDict(extra="ignore")
    commit: str | None = None
    dirty: bool = False


class DatasetRecord(BaseModel):
    """What a run's manifest says of a dataset: its identity, splits and the accounting of every packet."""

    model_config = ConfigDict(extra="allow")
    name: str | None = None
    source: str | None = None
    seed: int | None = None
    classes: list[str] = Field(default_factory=list)
    packets: int = 0
    status: Any = None
    packets_sha256: str | None = None
    generator: Any = None
    skipped_files: Any = None
    path: str | None = None
    flows: int = 0
    split_packets: dict[str, int] = Field(default_factory=dict)
    accounting: dict[str, int] = Field(default_factory=dict)
    normalization: Any = None
    unreadable_captures: list[Any] | None = None
    cross_capture_flows: Any = None
    test_flows_per_class: dict[str, int] = Field(default_factory=dict)
    split_rule: str | None = None


class Manifest(BaseModel):
    """manifest.json: what ran, where, on what, how it ended. Kinds keep their own records in ``sections``
    (each kind reads its section with its own model)."""

    model_config = ConfigDict(extra="allow", validate_assignment=False)
    experiment: str
    run_id: str
    target: str
    started: str = ""
    status: str = "running"
    pid: int = 0
    host: str = ""
    finished: str | None = None
    error: str | None = None
    kind: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # JSON in and out: the run's config as YAML gave it
    seed: int | None = None
    git: GitState = Field(default_factory=GitState)
    environment: dict[str, Any] = Field(default_factory=dict)  # JSON in and out: tool versions and machine facts
    target_detail: dict[str, Any] = Field(default_factory=dict)  # JSON in and out: what the target says of itself
    target_requested: str | None = None
    target_reason: str | None = None        # why this target ran (auto's choice, or asked for)
    target_fallback: str | None = None      # every variant ran elsewhere than asked: why
    clock: str | None = None                # trace | switch (testbed runs; the reference classifies on the trace)
    dataset: DatasetRecord | None = None
    datasets: dict[str, DatasetRecord] = Field(default_factory=dict)
    dataset_override: str | None = None
    variant_targets: dict[str, str] = Field(default_factory=dict)
    variant_fallbacks: dict[str, str] = Field(default_factory=dict)
    # dict[str, Any]: JSON in and out: each replay plan as the testbed wrote it
    replay_plans: dict[str, dict[str, Any]] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    code_fingerprint: str | None = None     # a published run: the fingerprint of the code that made it
    resumed_from: str | None = None         # the stopped run whose finished units this one took
    resumed_units: list[str] = Field(default_factory=list)
    # dict[str, Any]: JSON in and out: sections, each read through its model (Manifest.get)
    sections: dict[str, Any] = Field(default_factory=dict)

    def record(self, **fields: Any) -> None:
        """Set the manifest's own fields; an unknown name is refused (a kind's or a tool's own record is a
        section: ``put``)."""
        unknown = [k for k in fields if k not in type(self).model_fields]
        if unknown:
            raise TypeError(f"{unknown} are not manifest fields: write a section with Manifest.put(name, model)")
        for k, v in fields.items():
            setattr(self, k, v)

    def put(self, name: str, value: BaseModel) -> None:
        """Write a section: a writer's own record, typed by its model (read back with ``get`` and the same model)."""
        if name in type(self).model_fields:
            raise TypeError(f"{name!r} is a manifest field, not a section: use Manifest.record")
        self.sections[name] = value.model_dump(mode="json")

    def get(self, name: str, model: type[S]) -> S | None:
        """A section read with its model; None where the run has none. Sections are never read by key."""
        raw = self.sections.get(name)
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValueError as e:
            raise ResultsError(f"run {self.run_id}: its section {name!r} is not what this version reads "
                               f"({str(e).splitlines()[0]})", "re-run it with this version") from None

    def to_json(self) -> dict[str, Any]:  # JSON out: manifest.json
        return self.model_dump(mode="json", exclude_none=False)

    @staticmethod
    def read(path: Path) -> "Manifest":
        try:
            return Manifest.model_validate(json.loads(path.read_text()))
        except json.JSONDecodeError as e:
            raise ResultsError(f"{path}: not valid JSON ({e})", "the run directory is damaged") from None
        except ValueError as e:
            raise ResultsError(f"{path}: not a manifest this version reads ({str(e).splitlines()[0]})",
                               "re-run the experiment with this version") from None


NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def check_name(name: str, what: str = "experiment name") -> str:
    """A name used as a directory under results/: letters, digits, '.', '_', '-'; no path, no leading dot."""
    if not NAME_RE.fullmatch(name or "") or ".." in name:
        raise ResultsError(f"{what} {name!r} is not a plain name: it would write outside results/",
                           "use letters, digits, '.', '_' and '-' only (e.g. name: my-ablation)")
    return name


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


class RunDir:
    """Context manager that owns one run directory and finishes it atomically."""

    def __init__(self, results_root: str | os.PathLike[str], experiment: str, target: str) -> None:
        check_name(experiment)
        check_name(target, "target name")
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.exp_dir = Path(results_root) / experiment
        base = f"{stamp}-{target}"
        rid, i = base, 1
        while any(p.exists() for p in (self.exp_dir / rid, self.exp_dir / f".{rid}.partial",
                                         self.exp_dir / ".failed" / rid)):
            i += 1
            rid = f"{base}-{i}"
        self.run_id = rid
        self.path = self.exp_dir / f".{rid}.partial"
        self.final = self.exp_dir / rid
        self.manifest = Manifest(experiment=experiment, run_id=rid, target=target,
                                 started=dt.datetime.now().isoformat(timespec="seconds"), pid=os.getpid(),
                                 host=socket.gethostname())

    def __enter__(self) -> "RunDir":
        try:
            self.exp_dir.mkdir(parents=True, exist_ok=True)
            self.path.mkdir()
            (self.path / "figures").mkdir()
            (self.path / "artifacts").mkdir()
        except OSError as e:
            raise self._error(e) from None
        self.write_manifest()  # a killed run still says what it was
        return self

    def _error(self, e: OSError) -> ResultsError:
        if e.errno in DISK_FULL:
            return ResultsError(*disk_full_message(str(self.exp_dir), dir_size(self.path) or None))
        return ResultsError(f"cannot write the run directory {self.path}: {e.strerror}",
                            "check the permissions of the results directory, or pass --results elsewhere")

    def write_manifest(self) -> Path:
        return self.write_json("manifest.json", self.manifest.to_json())

    def write_json(self, name: str, obj: Any) -> Path:
        p = self.path / name
        try:
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_text(json.dumps(obj, indent=2, default=str))
            os.replace(tmp, p)
        except OSError as e:
            raise self._error(e) from None
        return p

    def set_target(self, target: str, why: str) -> None:
        """The run executed on another target than the one asked for: the run id and the manifest say so."""
        check_name(target, "target name")
        requested = self.manifest.target
        base = self.run_id.rsplit(f"-{requested}", 1)[0] + f"-{target}"
        rid, i = base, 1
        while (self.exp_dir / rid).exists() or (self.exp_dir / ".failed" / rid).exists():
            i += 1
            rid = f"{base}-{i}"
        self.run_id, self.final = rid, self.exp_dir / rid
        self.manifest.run_id, self.manifest.target = rid, target
        self.manifest.target_requested = self.manifest.target_requested or requested
        self.manifest.target_fallback = why

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.manifest.finished = dt.datetime.now().isoformat(timespec="seconds")
        if et is None:
            self.manifest.status = "complete"
            self.write_manifest()
            os.replace(self.path, self.final)
            log.info("results: %s", self.final)
            return
        self.manifest.status = "failed"
        self.manifest.error = f"{et.__name__}: {ev}"
        try:
            self.write_manifest()
        except ResultsError as e:
            log.error("could not update the manifest of the failed run: %s", e.problem)
        try:
            failed = self.exp_dir / ".failed"
            failed.mkdir(exist_ok=True)
            os.replace(self.path, failed / self.run_id)
            log.error("run failed; partial output kept in %s", failed / self.run_id)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)
        if isinstance(ev, OSError) and ev.errno in DISK_FULL:
            raise self._error(ev) from None
