"""The target that runs on the Mininet testbed: replay from h1, verdicts at h2, conformance.

One testbed serves all variants of a run: each variant's artifact is loaded
into s1, the test split is replayed from h1 and collected at h2. Each run also
checks conformance: the reference pipeline, fed the frames as replayed and the
switch's own ingress timestamps, must give the same verdict for every packet
the switch classified.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from chimera.compile.artifact import Artifact
from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.errors import TargetError

log = logging.getLogger(__name__)


class TestbedTarget:
    """Runs variants on the Mininet testbed with ``switch_cls`` as s1 (one testbed per run)."""

    name = "testbed"
    switch_cls: type | None = None

    def __init__(self, cfg: Any = None, build_dir: Path | None = None) -> None:
        from chimera.experiments.config import ReplayConfig
        self.replay_cfg = cfg.replay if cfg is not None else ReplayConfig()
        self.build_dir = build_dir or Path(__file__).resolve().parents[2] / "build"
        self.testbed: Any = None
        self._replay: tuple[Any, Path, list[bytes], PacketTable] | None = None

    def describe(self) -> dict[str, Any]:
        return {"target": self.name, "kernel": os.uname().release, "replay": self.replay_cfg.model_dump()}

    def _ensure_testbed(self, run_dir: Path) -> None:
        if self.testbed is None:
            from chimera.testbed.topology import Testbed
            assert self.switch_cls is not None
            tb = Testbed(self.switch_cls, self.build_dir, run_dir)
            tb.__enter__()
            self.testbed = tb

    def _replay_pcap(self, table: PacketTable, run_dir: Path) -> tuple[Path, list[bytes], PacketTable]:
        """The replay pcap (untagged Ethernet frames), its frames, and its own parse for the reference."""
        if self._replay is None or self._replay[0] is not table:  # held here: identity cannot be reused
            frames = normalized_frames(table, np.arange(len(table)))
            d = run_dir / "replay"
            d.mkdir(exist_ok=True)
            path = d / "replay.pcap"
            write_pcap(path, frames, table.ts_ns)
            self._replay = (table, path, frames, read_pcap(path))
        return self._replay[1], self._replay[2], self._replay[3]

    def unsupported(self, art: Artifact) -> str | None:
        """Why this target cannot run the artifact (subclasses say), or None."""
        return None

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str) -> Any:
        from chimera.pipeline.reference import run_reference
        from chimera.targets import TargetResult
        from chimera.testbed.collect import collect, latency_summary
        from chimera.testbed.replay import replay
        why = self.unsupported(art)
        if why:
            raise TargetError(f"artifact not supported by the {self.name} dataplane: {why}", "use --target reference")
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
        ref, ref_state = run_reference(art, replayed.take(rows), ts_ns=got.ts_in[rows])
        mism = 0
        for f in ("label", "flags", "score", "rule_id", "centroid", "map_version"):
            mism_f = int(np.sum(getattr(ref, f) != getattr(got.verdicts, f)[rows]))
            if mism_f:
                log.error("conformance: %d packets differ from the reference in '%s'", mism_f, f)
            mism = max(mism, mism_f)
        ema = regs.get("ema")
        ema_mism = None if ema is None else int(np.sum(np.asarray(ema) != ref_state.ema))
        if ema_mism:
            log.error("conformance: %d EMA occupancy registers differ from the reference", ema_mism)
        extra = {"lost": got.lost, "ema_mismatches": ema_mism, "foreign_frames": got.foreign, "unmarked_frames": got.unmarked,
                 "install_ms": install_s * 1e3, "reference_mismatches": mism, "conformance_checked": int(rows.size),
                 **latency_summary(got), "switch_counters": regs.get("counters", {})}
        log.info("[%s] %s: %d/%d packets classified, %d lost, %d differ from the reference", self.name, slug, rows.size,
                 len(table), got.lost, mism)
        return TargetResult(got.verdicts, int(regs.get("counters", {}).get("evictions", 0)), extra)

    def close(self) -> None:
        if self.testbed is not None:
            tb, self.testbed = self.testbed, None
            tb.__exit__(None, None, None)
