"""Build the eBPF object for one artifact (its constants header sizes every map).

Objects are kept in one content-addressed store (``STORE``), keyed by what the compile reads: the preprocessed
source (the program, every header it includes, the artifact's constants and the defines, as the compiler sees
them), the flags and the compiler's version. Any two builds that would compile the same text share one object,
within a process, across processes and across runs; a changed header, a different clang or a new libbpf header
is a new key. Every write goes to a name of its own and is moved into place with ``os.replace``, so builds that
run at once (test workers, shards) never take each other's half-written files.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from chimera import paths
from chimera.compile.header import render
from chimera.errors import TargetError, ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.testbed.nodes import BuildOptions

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("chimera.bpf.c")
CFLAGS = ["-g", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-Wall", "-Wno-unused-variable"]
CONSTANTS = "chimera_constants.h"
#: the store of compiled objects, one folder per key (the object and the constants header it was built with)
STORE = paths.BUILD / "ebpf-objects"
#: the store keeps this many objects, the least recently used leave first (an object is about 170 KB)
STORE_KEEP = 200


def build_redirect_object(build_dir: Path) -> Path:
    """The artifact-independent redirect program (redirect.bpf.c)."""
    return _clang(SOURCE.with_name("redirect.bpf.c"), None, build_dir)


def build_probe_object(build_dir: Path) -> Path:
    """The kernel probe of ``--target auto`` (probe.bpf.c): artifact-independent."""
    return _clang(SOURCE.with_name("probe.bpf.c"), None, build_dir)


def build_object(art: Artifact, build_dir: Path, build: BuildOptions | None = None) -> Path:
    """Compile chimera.bpf.c (or the build's mutant source) against the artifact's header, with the build's
    defines."""
    b = build or BuildOptions()
    return _clang(b.source or SOURCE, render(art), build_dir, b.defines())


@functools.cache
def _clang_version(clang: str) -> str:
    return subprocess.run([clang, "--version"], capture_output=True, text=True, check=False).stdout


def _clang_path() -> str:
    clang = shutil.which("clang")
    if clang is None:
        raise ToolMissingError("clang is not installed (needed to build the eBPF dataplane)",
                               "apt-get install clang llvm libbpf-dev (scripts/bootstrap does it)")
    return clang


def _argv(clang: str, source: Path, include: Path, defines: list[str]) -> list[str]:
    return [clang, *CFLAGS, *defines, f"-I{include}", f"-I{SOURCE.parent}"]


def _failed(what: str, stderr: str) -> TargetError:
    return TargetError(f"clang failed to {what} the eBPF dataplane:\n{stderr[-3000:]}",
                       "check that libbpf-dev provides <bpf/bpf_helpers.h>; the artifact may exceed the "
                       "eBPF target's limits (named in the error)")


def object_key(clang: str, source: Path, include: Path, defines: list[str]) -> str:
    """The key of a compile: the source as the preprocessor leaves it (without line markers, so the folder it
    was read from does not count), the flags and the compiler's version."""
    r = subprocess.run([*_argv(clang, source, include, defines), "-E", "-P", str(source)], capture_output=True,
                       check=False)
    if r.returncode != 0:
        raise _failed("preprocess", r.stderr.decode(errors="replace"))
    h = hashlib.sha256()
    for part in (_clang_version(clang).encode(), " ".join([*CFLAGS, *defines]).encode(), source.name.encode(),
                 r.stdout):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def _clang(source: Path, header: str | None, build_dir: Path, defines: list[str] | None = None) -> Path:
    """The object of ``source`` (with ``header`` as its constants), in ``build_dir/ebpf-<key>/``: from the store
    where it holds that key, compiled into the store first where it does not."""
    clang, defs = _clang_path(), list(defines or [])
    STORE.mkdir(parents=True, exist_ok=True)
    name = source.name.replace(".c", ".o")
    work = Path(tempfile.mkdtemp(prefix="compile.", dir=STORE))   # this build's own folder in the store
    try:
        if header is not None:
            (work / CONSTANTS).write_text(header)
        key = object_key(clang, source, work, defs)
        stored = STORE / key
        if (stored / name).is_file():
            os.utime(stored)              # recently used: the store's pruning keeps it
        else:
            r = subprocess.run([*_argv(clang, source, work, defs), "-c", str(source), "-o", str(work / name)],
                               capture_output=True, text=True, check=False)
            if r.returncode != 0:
                raise _failed("build", r.stderr)
            _store(work, stored)
    finally:
        shutil.rmtree(work, ignore_errors=True)   # gone already where _store moved it into place
    out_dir = build_dir / f"ebpf-{key[:16]}"
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in stored.iterdir():
        _copy(f, out_dir / f.name)
    return out_dir / name


def _store(work: Path, stored: Path) -> None:
    """Move a compile's folder into the store under its key; where another build stored the same key first, its
    folder (the same inputs, the same object) is kept."""
    try:
        os.rename(work, stored)       # atomic; refused where the key's folder exists already
    except OSError:
        if not stored.is_dir():
            raise
    _prune()


def _copy(src: Path, dst: Path) -> None:
    """Copy under a name of this process's, then replace: a reader never sees a half-written file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _prune() -> None:
    """Keep the ``STORE_KEEP`` most recently used objects (a mutation run compiles hundreds of distinct ones)."""
    keys = [p for p in STORE.iterdir() if p.is_dir() and len(p.name) == 64]
    if len(keys) <= STORE_KEEP:
        return
    keys.sort(key=lambda p: p.stat().st_mtime)
    for p in keys[: len(keys) - STORE_KEEP]:
        shutil.rmtree(p, ignore_errors=True)
        log.debug("eBPF object store: %s pruned", p.name)
