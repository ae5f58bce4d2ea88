"""p4c-bm2-ss for chimera.p4 with an artifact's constants header (p4-utils' compiler interface, kept small)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from chimera.compile.header import render
from chimera.errors import TargetError, ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.schema import P4_SOURCE
from chimera.testbed.nodes import BuildOptions

INSTALL_HINT = ("install p4c and BMv2 from the p4lang project's packages (Ubuntu: p4lang-p4c, p4lang-bmv2; the "
                "Vagrantfile provisions them), or use --target ebpf / reference")


#: p4c's own P4Info beside the BMv2 JSON (text format)
P4C_P4INFO = "p4c.p4info.txt"


class CompilationError(TargetError):
    """p4c-bm2-ss rejected chimera.p4 for this artifact."""


def compiled_in(header: str, source: Path = P4_SOURCE) -> str:
    """The header lines chimera.p4 compiles in (the CHIMERA_* names its source uses).

    Runtime parameters such as ALPHA/BETA live in tables, so variants that differ
    only there share one pipeline; this is also what makes p4/chimera_constants.h
    stale or current.
    """
    used = set(re.findall(r"CHIMERA_[A-Z0-9_]+", source.read_text()))
    return "\n".join(line for line in header.splitlines()
                     if line.startswith("#define ") and line.split(" ")[1] in used)


def compile_p4(art: Artifact, build_dir: Path, build: BuildOptions | None = None) -> Path:
    """Compile chimera.p4 (or the build's mutant source) for ``art`` with the build's defines; cached by (source,
    compiled-in constants, defines, the p4c binary). Returns the BMv2 JSON.

    The source is copied next to the artifact's header: a quoted #include searches the
    source's own directory first, where p4/chimera_constants.h (the quickstart model's) lives.
    p4c's own P4Info is written beside the JSON (``invoke p4info --check`` diffs it), as ``P4C_P4INFO``: a
    ``.txt`` name, the text-format suffix every p4c release reads (p4c 1.2.4.2, what p4lang's packages ship,
    rejects ``.txtpb``: "Could not detect p4runtime info file format").
    """
    p4c = p4c_binary()
    b = build or BuildOptions()
    source = b.source or P4_SOURCE
    header = render(art)
    key = hashlib.sha256(source.read_bytes() + compiled_in(header, source).encode()
                         + " ".join(b.defines()).encode() + compiler_identity(p4c).encode()).hexdigest()[:16]
    out = build_dir / f"bmv2-{key}"
    js = out / "chimera.json"
    if js.exists():
        return js
    out.mkdir(parents=True, exist_ok=True)
    (out / "chimera_constants.h").write_text(header)
    src = out / P4_SOURCE.name
    shutil.copyfile(source, src)
    return run_p4c(p4c, src, js, [*b.defines(), "--p4runtime-files", str(out / P4C_P4INFO)],
                   "this is a bug in chimera.p4 for this configuration: report it with the header", name=P4_SOURCE)


def compile_fixed(source: Path, build_dir: Path) -> Path:
    """Compile a fixed v1model program that needs no constants header and no P4Runtime (p4/forward.p4,
    p4/redirect.p4); cached by its source and the p4c binary. Returns the BMv2 JSON, which simple_switch takes
    on its command line."""
    p4c = p4c_binary()
    key = hashlib.sha256(source.read_bytes() + compiler_identity(p4c).encode()).hexdigest()[:16]
    js = build_dir / f"bmv2-{source.stem}-{key}" / f"{source.stem}.json"
    if js.exists():
        return js
    js.parent.mkdir(parents=True, exist_ok=True)
    return run_p4c(p4c, source, js, [], f"fix {source}")


def compiler_identity(p4c: str) -> str:
    """What the compile cache keys on besides the source: which p4c binary (its real path, size and mtime) and
    the name its P4Info is written under. A p4c upgraded or switched (the toolchain matrix) never reuses another
    p4c's JSON."""
    real = Path(p4c).resolve()
    st = real.stat()
    return f"{real}:{st.st_size}:{st.st_mtime_ns}:{P4C_P4INFO}"


def p4c_binary() -> str:
    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        raise ToolMissingError("p4c-bm2-ss is not installed", INSTALL_HINT)
    return p4c


def run_p4c(p4c: str, src: Path, js: Path, extra: list[str], fix: str, name: Path | None = None) -> Path:
    """p4c-bm2-ss (v1model, P4_16) on ``src`` into ``js``, written under a temporary name and renamed when
    complete, so a failed or interrupted compile never leaves a JSON the cache would trust; the name is this
    compile's own, so compiles of one program at once never take each other's file."""
    fd, name_tmp = tempfile.mkstemp(prefix=f".{js.name}.", suffix=".tmp", dir=js.parent)
    os.close(fd)
    tmp = Path(name_tmp)
    try:
        r = subprocess.run([p4c, "--arch", "v1model", "--std", "p4-16", *extra, "-o", str(tmp), str(src)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise CompilationError(f"p4c-bm2-ss failed on {name or src}:\n{r.stderr[-4000:]}", fix)
        os.replace(tmp, js)
    finally:
        tmp.unlink(missing_ok=True)
    return js
