"""The BMv2 target: simple_switch_grpc running p4/chimera.p4 as s1, programmed over P4Runtime.

p4c and BMv2 are not installable on this project's own machines (no package in
any registry they reach); they are on the reviewers' Vagrant VM (Vagrantfile).
Where they are absent, ``--target bmv2`` fails fast naming what to install, and
the BMv2 tests skip with that reason. Nothing here pretends to have run.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from chimera.compile.artifact import Artifact
from chimera.compile.header import render
from chimera.errors import TargetError, ToolMissingError
from chimera.targets.bmv2.schema import P4_SOURCE
from chimera.testbed.target import TestbedTarget

TOOLS = ("simple_switch_grpc", "p4c-bm2-ss")
INSTALL_HINT = ("install p4c and BMv2 from the p4lang project's packages (Ubuntu: p4lang-p4c, p4lang-bmv2; the "
                "Vagrantfile provisions them), or use --target ebpf / reference")


def unavailable_reason() -> str | None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (p4c/BMv2 are in no registry this machine reaches)"
    from chimera.targets.ebpf import unavailable_reason as testbed_reason
    return testbed_reason(need_clang=False)  # the Mininet testbed, without the eBPF toolchain


def require_available() -> None:
    why = unavailable_reason()
    if why is not None:
        raise ToolMissingError(f"the bmv2 target cannot run: {why}", INSTALL_HINT)


class CompilationError(TargetError):
    """p4c-bm2-ss rejected chimera.p4 for this artifact."""


def compile_p4(art: Artifact, build_dir: Path) -> Path:
    """p4c-bm2-ss chimera.p4 with the artifact's constants header; cached by (source, header) hash.

    Returns the BMv2 JSON; p4c's own P4Info is written beside it (``invoke p4info --check`` diffs it).
    """
    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        raise ToolMissingError("p4c-bm2-ss is not installed", INSTALL_HINT)
    header = render(art)
    # key on what the program compiles in (CHIMERA_* names it uses), not on runtime parameters such as
    # ALPHA/BETA, which live in tables: variants that differ only there share one pipeline
    used = sorted(set(re.findall(r"CHIMERA_[A-Z_]+", P4_SOURCE.read_text())))
    compiled_in = "\n".join(line for line in header.splitlines() if line.split(" ")[1:2] and line.split(" ")[1] in used)
    key = hashlib.sha256(P4_SOURCE.read_bytes() + compiled_in.encode()).hexdigest()[:16]
    out = build_dir / f"bmv2-{key}"
    js = out / "chimera.json"
    if js.exists():
        return js
    out.mkdir(parents=True, exist_ok=True)
    (out / "chimera_constants.h").write_text(header)
    r = subprocess.run([p4c, "--arch", "v1model", "--std", "p4-16", f"-I{out}", "-o", str(js),
                        "--p4runtime-files", str(out / "p4c.p4info.txt"), str(P4_SOURCE)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise CompilationError(f"p4c-bm2-ss failed on {P4_SOURCE}:\n{r.stderr[-4000:]}",
                               "this is a bug in chimera.p4 for this configuration: report it with the header")
    return js


class Bmv2Target(TestbedTarget):
    """s1 is simple_switch_grpc; replay is paced below BMv2's capacity (loss is measured and reported)."""

    name = "bmv2"

    def __init__(self, cfg: Any = None, build_dir: Path | None = None) -> None:
        from chimera.targets.bmv2.node import Bmv2Switch
        super().__init__(cfg, build_dir)
        self.switch_cls = Bmv2Switch

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "clock": "BMv2 ingress_global_timestamp (µs, x1000 to ns)"}

    def unsupported(self, art: Artifact) -> str | None:
        from chimera.targets.bmv2.p4rt import check_supported
        return check_supported(art)
