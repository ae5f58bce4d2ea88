"""The eBPF target: the Mininet testbed (chimera.testbed.target) with the tc program in s1."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from chimera.compile.artifact import Artifact
from chimera.errors import ToolMissingError
from chimera.testbed.target import TestbedTarget

log = logging.getLogger(__name__)
TOOLS = {"clang": "clang", "tcpreplay": "tcpreplay", "tcpdump": "tcpdump", "mnexec": "mininet",
         "ethtool": "ethtool", "taskset": "util-linux", "ip": "iproute2"}


def unavailable_reason() -> str | None:
    """Why the eBPF testbed cannot run on this machine, or None."""
    if os.geteuid() != 0:
        return "not running as root (the testbed creates network namespaces and loads BPF programs)"
    missing = [f"{t} (apt-get install {p})" for t, p in TOOLS.items() if shutil.which(t) is None]
    if missing:
        return "missing tools: " + ", ".join(missing)
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet's Python package is not importable (apt-get install mininet; use the .venv from bootstrap)"
    try:
        from chimera.targets.ebpf.libbpf import lib
        lib()
    except ToolMissingError as e:
        return e.problem
    return None


def require_available() -> None:
    why = unavailable_reason()
    if why is not None:
        raise ToolMissingError(f"the eBPF target cannot run: {why}",
                               "run as root after scripts/bootstrap, or use --target reference")


class EbpfTarget(TestbedTarget):
    """s1 is the eBPF/tc switch."""

    name = "ebpf"

    def __init__(self, cfg: Any = None, build_dir: Path | None = None) -> None:
        from chimera.testbed.nodes import EbpfSwitch
        super().__init__(cfg, build_dir)
        self.switch_cls = EbpfSwitch

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "clock": "switch ingress (CLOCK_MONOTONIC)"}

    def unsupported(self, art: Artifact) -> str | None:
        """Why this artifact cannot run in the eBPF dataplane, or None."""
        if art.incremental is not None:
            return "incremental S_t/Z_t accumulators are not in the eBPF dataplane (batch only)"
        if art.c("NUM_CLASSES") > 16:
            return "more than 16 classes (eBPF stack budget)"
        if art.c("SOFT_RULES") > 32:
            return "more than 32 soft rules"
        return None
