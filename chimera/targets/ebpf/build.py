"""Build the eBPF object for one artifact (its constants header sizes every map)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from chimera.compile.header import render
from chimera.errors import TargetError, ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.testbed.nodes import BuildOptions

SOURCE = Path(__file__).with_name("chimera.bpf.c")
CFLAGS = ["-g", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-Wall", "-Wno-unused-variable"]


def build_redirect_object(build_dir: Path) -> Path:
    """The artifact-independent redirect program (redirect.bpf.c)."""
    return _clang(SOURCE.with_name("redirect.bpf.c"), None, build_dir)


def build_probe_object(build_dir: Path) -> Path:
    """The kernel probe of ``--target auto`` (probe.bpf.c): artifact-independent."""
    return _clang(SOURCE.with_name("probe.bpf.c"), None, build_dir)


def build_object(art: Artifact, build_dir: Path, build: BuildOptions | None = None) -> Path:
    """Compile chimera.bpf.c (or the build's mutant source) against the artifact's header, with the build's
    defines; cached by (source, header, defines) hash."""
    b = build or BuildOptions()
    return _clang(b.source or SOURCE, render(art), build_dir, b.defines())


def _clang(source: Path, header: str | None, build_dir: Path, defines: list[str] | None = None) -> Path:
    clang = shutil.which("clang")
    if clang is None:
        raise ToolMissingError("clang is not installed (needed to build the eBPF dataplane)",
                               "apt-get install clang llvm libbpf-dev (scripts/bootstrap does it)")
    shared = (SOURCE.parent / "ports.bpf.h").read_bytes()
    key = hashlib.sha256(source.read_bytes() + shared + (header or "").encode()
                         + " ".join(defines or []).encode()).hexdigest()[:16]
    out_dir = build_dir / f"ebpf-{key}"
    obj = out_dir / source.name.replace(".c", ".o")
    if obj.exists():
        return obj
    out_dir.mkdir(parents=True, exist_ok=True)
    if header is not None:
        (out_dir / "chimera_constants.h").write_text(header)
    r = subprocess.run([clang, *CFLAGS, *(defines or []), f"-I{out_dir}", f"-I{SOURCE.parent}", "-c", str(source),
                        "-o", str(obj) + ".tmp"], capture_output=True, text=True)
    if r.returncode != 0:
        raise TargetError(f"clang failed to build the eBPF dataplane:\n{r.stderr[-3000:]}",
                          "check that libbpf-dev provides <bpf/bpf_helpers.h>; the artifact may exceed the "
                          "eBPF target's limits (named in the error)")
    Path(str(obj) + ".tmp").rename(obj)
    return obj
