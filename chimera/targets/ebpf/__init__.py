"""The eBPF target: the Mininet testbed with the pipeline as a tc program in s1.

One testbed serves all variants of a run: each variant's artifact is built
into its own object, installed, attached, and the test split is replayed from
h1 and collected at h2. Each run also checks conformance: the reference
pipeline, fed the switch's own ingress timestamps, must produce the same
verdict for every packet the switch classified.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from chimera.compile.artifact import Artifact
from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.errors import TargetError, ToolMissingError

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


class EbpfTarget:
    name = "ebpf"

    def __init__(self, cfg: Any = None, build_dir: Path | None = None) -> None:
        from chimera.experiments.config import ReplayConfig
        self.replay_cfg = cfg.replay if cfg is not None else ReplayConfig()
        self.build_dir = build_dir or Path(__file__).resolve().parents[3] / "build"
        self.testbed: Any = None
        self._replay: tuple[Any, Path, list[bytes], PacketTable] | None = None

    def describe(self) -> dict[str, Any]:
        return {"target": "ebpf", "kernel": os.uname().release, "clock": "switch ingress (CLOCK_MONOTONIC)",
                "replay": self.replay_cfg.model_dump()}

    def _ensure_testbed(self, run_dir: Path) -> None:
        if self.testbed is None:
            from chimera.testbed.nodes import EbpfSwitch
            from chimera.testbed.topology import Testbed
            tb = Testbed(EbpfSwitch, self.build_dir, run_dir)
            tb.__enter__()
            self.testbed = tb

    def _replay_pcap(self, table: PacketTable, run_dir: Path) -> tuple[Path, list[bytes], PacketTable]:
        """The replay pcap (untagged Ethernet frames), its frames, and its own parse for the reference."""
        key = (id(table), len(table))
        if self._replay is None or self._replay[0] != key:
            frames = normalized_frames(table, np.arange(len(table)))
            d = run_dir / "replay"
            d.mkdir(exist_ok=True)
            path = d / "replay.pcap"
            write_pcap(path, frames, table.ts_ns)
            self._replay = (key, path, frames, read_pcap(path))
        return self._replay[1], self._replay[2], self._replay[3]

    def unsupported(self, art: Artifact) -> str | None:
        """Why this artifact cannot run in the eBPF dataplane, or None."""
        if art.incremental is not None:
            return "incremental S_t/Z_t accumulators are not in the eBPF dataplane (batch only)"
        if art.c("NUM_CLASSES") > 16:
            return "more than 16 classes (eBPF stack budget)"
        if art.c("SOFT_RULES") > 32:
            return "more than 32 soft rules"
        return None

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str) -> Any:
        from chimera.pipeline.reference import run_reference
        from chimera.targets import TargetResult
        from chimera.testbed.collect import collect, latency_summary
        from chimera.testbed.replay import replay
        why = self.unsupported(art)
        if why:
            raise TargetError(f"artifact not supported by the eBPF dataplane: {why}", "use --target reference")
        self._ensure_testbed(run_dir)
        pcap, frames, replayed = self._replay_pcap(table, run_dir)
        tb = self.testbed
        install_s = tb.s1.load(art)
        files = replay(tb.h1, tb.h2, pcap, self.replay_cfg, run_dir / "replay", slug)
        got = collect(frames, files.sent, files.received)
        regs = tb.s1.registers()
        tb.s1.unload()
        # conformance: the reference on exactly what the switch classified, on the switch's clock
        rows = np.flatnonzero(got.received)
        ref, _ = run_reference(art, replayed.take(rows), ts_ns=got.ts_in[rows])
        mism = 0
        for f in ("label", "flags", "score", "rule_id", "centroid", "map_version"):
            mism_f = int(np.sum(getattr(ref, f) != getattr(got.verdicts, f)[rows]))
            if mism_f:
                log.error("conformance: %d packets differ from the reference in '%s'", mism_f, f)
            mism = max(mism, mism_f)
        extra = {"lost": got.lost, "foreign_frames": got.foreign, "unmarked_frames": got.unmarked,
                 "install_ms": install_s * 1e3, "reference_mismatches": mism, "conformance_checked": int(rows.size),
                 **latency_summary(got), "switch_counters": regs.get("counters", {})}
        log.info("[ebpf] %s: %d/%d packets classified, %d lost, %d differ from the reference", slug, rows.size,
                 len(table), got.lost, mism)
        self.last = got
        return TargetResult(got.verdicts, int(regs.get("counters", {}).get("evictions", 0)), extra)

    def close(self) -> None:
        if self.testbed is not None:
            tb, self.testbed = self.testbed, None
            tb.__exit__(None, None, None)
