"""The throughput kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging
import struct

import numpy as np

from chimera.data.pcap import read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.kinds.throughput import tables as T
from chimera.experiments.kinds.throughput.config import ThroughputExperiment, ThroughputSection
from chimera.experiments.stages.context import RunContext
from chimera.formats.rows import frame
from chimera.targets.base import Capability
from chimera.testbed.outcome import Delivery

log = logging.getLogger(__name__)


ETH = 14


def resize(frame: bytes, size: int) -> bytes:
    """The same headers, the frame cut or zero-padded to ``size`` bytes, the IP length field rewritten."""
    f = bytearray(frame[:size].ljust(size, b"\0"))
    if len(frame) >= ETH + 20 and frame[12:14] == b"\x08\x00":
        struct.pack_into("!H", f, ETH + 2, size - ETH)
    elif len(frame) >= ETH + 40 and frame[12:14] == b"\x86\xdd":
        struct.pack_into("!H", f, ETH + 4, size - ETH - 40)
    return bytes(f)


def _row(path: str, size: int | str, mean_bytes: float, x: Delivery) -> T.ThroughputRow:
    """One row of throughput.csv from what a path delivered."""
    rate = x.recv_pps
    return T.ThroughputRow(path, str(size), mean_bytes, x.replayed, x.verdicts, x.not_sent, x.dropped_by_capture,
                           x.lost, x.sent_pps, rate, rate * mean_bytes * 8 / 1e9 if rate else None,
                           x.reference_mismatches)


def run(ctx: RunContext[ThroughputExperiment]) -> None:
    spec = ctx.cfg.throughput
    target = ctx.target
    top = ctx.replay.model_copy(update={"mode": "topspeed"})
    built = build_model(ctx, "throughput")
    art, model_json, data = built.art, built.model_json, built.data
    rows_idx = data.replay_rows[: spec.max_packets]
    base = normalized_frames(data.ds.table, rows_idx)
    ts = data.ds.table.ts_ns[rows_idx]
    work = ctx.run.path / "frames"
    work.mkdir(exist_ok=True)
    rows: list[T.ThroughputRow] = []
    mix_table = None
    for size in spec.sizes:
        frames = base if size == "mix" else [resize(f, int(size)) for f in base]
        pcap = work / f"frames-{size}.pcap"
        write_pcap(pcap, frames, ts)
        table = read_pcap(pcap)
        mix_table = table if size == "mix" else mix_table
        mean = float(np.mean([len(f) for f in frames]))
        with ctx.timed(f"chimera:{size}"):
            res = target.run(art, table, ctx.run.path, f"tput-{size}", replay=top)
        rows.append(_row(f"Chimera ({target.name})", size, mean, Delivery.of(res.outcome)))
        if target.can(Capability.FORWARDING):
            with ctx.timed(f"forwarding:{size}"):
                fwd = target.run_forwarding(table, ctx.run.path, f"tput-fwd-{size}", replay=top)
            rows.append(_row("bare forwarding", size, mean, Delivery.of(fwd)))
        if spec.software and target.can(Capability.SOFTWARE_HOST):
            with ctx.timed(f"software:{size}"):
                res = target.run_software(model_json, table, ctx.run.path, f"tput-sc-{size}", replay=top)
            rows.append(_row("software classifier host †", size, mean, Delivery.of(res.outcome)))
        log.info("[throughput] %s: %s", size, "; ".join(f"{r.path} {(r.delivered_pps or 0) / 1e3:.0f} kpps, "
                                                         f"lost {r.lost}" for r in rows[-3:]))
        T.THROUGHPUT.write(frame(rows, T.ThroughputRow), ctx.run.path)
    ladder: list[T.LadderRow] = []
    table = mix_table if mix_table is not None else read_pcap(work / f"frames-{spec.sizes[0]}.pcap")
    for pps in sorted(spec.ladder_pps):
        with ctx.timed(f"ladder:{pps}"):
            x = Delivery.of(target.run(art, table, ctx.run.path, f"ladder-{pps}",
                                       replay=ctx.replay.model_copy(update={"mode": "pps", "pps": pps})).outcome)
        ladder.append(T.LadderRow(pps, x.sent_pps, x.lost, x.dropped_by_capture, x.reference_mismatches))
        log.info("[throughput] ladder %d pps: offered %.0f pps, %s lost", pps, x.sent_pps or 0, x.lost)
        T.LADDER.write(frame(ladder, T.LadderRow), ctx.run.path)
        if x.lost:
            break
    ok = [r for r in ladder if r.lost == 0]
    best = max(ok, key=lambda r: r.offered_pps or 0) if ok else None
    ctx.record(ThroughputSection(  # the rate actually offered: tcpreplay may fall short of the one asked
        **spec.model_dump(), max_zero_loss_pps=round(best.offered_pps) if best and best.offered_pps else None,
        max_zero_loss_requested_pps=best.pps if best else None, target_detail=target.describe()))
