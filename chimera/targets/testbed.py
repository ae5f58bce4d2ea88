"""The base of targets that run on the Mininet testbed: replay from h1, verdicts at h2, conformance.

One testbed serves all variants of a run: each variant's artifact is loaded
into s1 (the subclass's ``switch_cls``), the packets are replayed from h1 and
collected at h2. Each run also checks conformance: the reference pipeline, fed
the frames as replayed and the switch's own ingress timestamps, must give the
same verdict for every packet the switch classified, and the same EMA registers.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from chimera.data.pcap import PacketTable, read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.controlplane.live import LiveControl
from chimera.controlplane.loop import SlowLoop
from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import Verdicts, run_reference, run_reference_versions
from chimera.targets.base import TargetResult
from chimera.testbed.collect import account, collect, latency_summary, per_packet_latency, rates
from chimera.testbed.nodes import SENDER_MTU, TargetSwitch
from chimera.testbed.replay import ReplayConfig, replay
from chimera.testbed.topology import Testbed

log = logging.getLogger(__name__)
DEFAULT_BUILD_DIR = Path(__file__).resolve().parents[2] / "build"


#: state registers compared with the reference after a run (name in registers() -> SwitchState attribute)
REGISTERS = {"ema": "ema", "class_ema": "class_ema", "sample": "sample", "sample_count": "sample_count"}


def conformance(art: Artifact | dict[int, Artifact], replayed: PacketTable, got: Verdicts, received: np.ndarray,
                ts_in: np.ndarray, regs: dict[str, Any]) -> tuple[int, int | None, int]:
    """(packets whose verdict differs from the reference, state registers that differ or None if none were
    read, packets checked): the reference runs on exactly what the switch classified, on the switch's clock.

    ``art`` may be every map version a run installed: the reference then switches versions at exactly the
    packets where the switch did (the map version in each verdict header is the switch's own record).
    """
    rows = np.flatnonzero(received)
    if isinstance(art, dict):
        try:
            ref, ref_state = run_reference_versions(art, replayed.take(rows), got.map_version[rows], ts_ns=ts_in[rows])
        except KeyError as e:
            raise TargetError(f"conformance: {e.args[0]}", "a verdict names a map version the control plane never "
                              "installed: a switch bug (or a foreign switch on the link)") from None
    else:
        ref, ref_state = run_reference(art, replayed.take(rows), ts_ns=ts_in[rows])
    mism = 0
    for f in Verdicts.HEADER_FIELDS:
        mism_f = int(np.sum(getattr(ref, f) != getattr(got, f)[rows]))
        if mism_f:
            log.error("conformance: %d packets differ from the reference in '%s'", mism_f, f)
        mism = max(mism, mism_f)
    reg_mism: int | None = None
    for name, attr in REGISTERS.items():
        if name not in regs:
            continue
        diff = int(np.sum(np.atleast_1d(np.asarray(regs[name])) != np.atleast_1d(getattr(ref_state, attr))))
        if diff:
            log.error("conformance: %d '%s' registers differ from the reference", diff, name)
        reg_mism = (reg_mism or 0) + diff
    return mism, reg_mism, int(rows.size)


class TestbedTarget:
    """Runs variants on the Mininet testbed with ``switch_cls`` as s1 (one testbed per run)."""

    name = "testbed"
    switch_cls: type[TargetSwitch]

    def __init__(self, replay_cfg: ReplayConfig | None = None, build_dir: Path | None = None) -> None:
        self.replay_cfg = replay_cfg or ReplayConfig()
        self.build_dir = build_dir or DEFAULT_BUILD_DIR
        self.testbed: Testbed | None = None
        self._replay: tuple[PacketTable, Path, list[bytes], PacketTable] | None = None

    def describe(self) -> dict[str, Any]:
        return {"target": self.name, "kernel": os.uname().release, "replay": self.replay_cfg.model_dump()}

    def _ensure_testbed(self, run_dir: Path) -> None:
        if self.testbed is None:
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

    def limits(self) -> dict[str, int]:
        return {}

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str,
            control: SlowLoop | None = None) -> TargetResult:
        why = self.unsupported(art)
        if why:
            raise TargetError(f"artifact not supported by the {self.name} dataplane: {why}", "use --target reference")
        self._ensure_testbed(run_dir)
        assert self.testbed is not None
        pcap, frames, replayed = self._replay_pcap(table, run_dir)
        s1 = self.testbed.s1
        install_s = s1.load(art)
        live = control is not None and control.cfg.enabled
        files = replay(self.testbed.h1, self.testbed.h2, pcap, self.replay_cfg, run_dir / "replay", slug,
                       switch_alive=s1.alive, during=(lambda: LiveControl(s1, control)) if live else None)
        got = collect(frames, files.sent, files.received)
        acc, _ = account(frames, got, files.failed_to_send, files.dropped_at_receiver, SENDER_MTU)
        regs = s1.registers()
        s1.unload()
        versions = control.artifacts if control is not None else art
        mism, reg_mism, checked = conformance(versions, replayed, got.verdicts, got.received, got.ts_in, regs)
        extra = {**acc.as_dict(), "register_mismatches": reg_mism, "foreign_frames": got.foreign,
                 "unmarked_frames": got.unmarked, "install_ms": install_s * 1e3, "reference_mismatches": mism,
                 "conformance_checked": checked, **latency_summary(got), **rates(got),
                 "switch_counters": regs.get("counters", {})}
        log.info("[%s] %s: %d/%d frames with a verdict, %d not sent, %d dropped by the capture, %d lost; "
                 "%d differ from the reference", self.name, slug, checked, len(table), acc.not_sent,
                 acc.dropped_by_capture, acc.lost, mism)
        evictions = regs.get("counters", {}).get("evictions")  # None: unknown (registers unreadable)
        return TargetResult(got.verdicts, evictions, extra, per_packet_latency(got))

    def close(self) -> None:
        if self.testbed is not None:
            tb, self.testbed = self.testbed, None
            tb.__exit__(None, None, None)
