"""The eBPF target: the Mininet testbed with the tc program (chimera.bpf.c) in s1.

Owns the switch node (``node.EbpfSwitch``), the object build (``build``), the
libbpf loader with versioned installs (``loader``) and the ctypes binding
(``libbpf``); the testbed (chimera.testbed) knows none of them.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from chimera.errors import ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.targets.base import TargetResult
from chimera.targets.ebpf.node import EbpfSwitch
from chimera.targets.software.host import run_on_classifier_host
from chimera.targets.testbed import TestbedTarget
from chimera.testbed.tools import testbed_unavailable_reason

log = logging.getLogger(__name__)
#: compile-time limits of chimera.bpf.c (its #error checks say the same)
LIMITS = {"NUM_CLASSES": 16, "SOFT_RULES": 32, "RF_FEATURES": 16, "D_V": 16, "NUM_CENTROIDS": 256}


def unavailable_reason() -> str | None:
    """Why the testbed with the eBPF switch cannot run here, or None."""
    why = testbed_unavailable_reason()
    if why is not None:
        return why
    if shutil.which("clang") is None:
        return "missing tools: clang (apt-get install clang)"
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
    switch_cls = EbpfSwitch

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "clock": "switch ingress (CLOCK_MONOTONIC)"}

    def run_software(self, model_json: Path, table: Any, run_dir: Path, slug: str) -> TargetResult:
        """A † configuration: s1 redirects h1's frames to the software classifier host sc, which marks
        them and sends them back through s1 to h2."""
        self._ensure_testbed(run_dir)
        pcap, frames, _ = self._replay_pcap(table, run_dir)
        s1 = self.testbed.s1
        s1.load_redirect([(f"{s1.name}-eth1", f"{s1.name}-eth3"), (f"{s1.name}-eth3", f"{s1.name}-eth2")])
        try:
            return run_on_classifier_host(self.testbed, model_json, pcap, frames, self.replay_cfg, run_dir, slug)
        finally:
            s1.unload()

    def run_forwarding(self, table: Any, run_dir: Path, slug: str) -> dict[str, Any]:
        """Bare forwarding on the same path: s1 runs only a redirect program (h1 -> h2), no classification.
        The yardstick of the throughput figure; counts come from the two captures and the tools."""
        from chimera.data.pcap import read_pcap
        from chimera.testbed.collect import span_rate
        from chimera.testbed.replay import replay
        self._ensure_testbed(run_dir)
        pcap, frames, _ = self._replay_pcap(table, run_dir)
        s1 = self.testbed.s1
        s1.load_redirect([(f"{s1.name}-eth1", f"{s1.name}-eth2")])
        try:
            files = replay(self.testbed.h1, self.testbed.h2, pcap, self.replay_cfg, run_dir / "replay", slug,
                           switch_alive=s1.alive, rx_filter="")
        finally:
            s1.unload()
        sent, got = read_pcap(files.sent), read_pcap(files.received)
        return {"replayed": len(frames), "sent": len(sent), "verdicts": len(got), "not_sent": files.failed_to_send,
                "dropped_by_capture": files.dropped_at_receiver,
                "lost": max(0, len(sent) - len(got) - files.dropped_at_receiver),
                "sent_pps": span_rate(sent.ts_ns), "recv_pps": span_rate(got.ts_ns)}

    def limits(self) -> dict[str, int]:
        return dict(LIMITS)

    def unsupported(self, art: Artifact) -> str | None:
        """Why this artifact cannot run in the eBPF dataplane, or None."""
        if art.c("AGG_INCREMENTAL") != 1:
            return ("the batch form (and the kernel-table attention of rff/softmax) runs on the reference only; "
                    "the eBPF dataplane keeps incremental S_t/Z_t accumulators")
        for k, lim in LIMITS.items():
            if art.c(k) > lim:
                return f"{k}={art.c(k)} exceeds the eBPF program's maximum {lim}"
        return None
