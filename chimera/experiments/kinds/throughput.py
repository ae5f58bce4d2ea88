"""The throughput kind (the paper's throughput figure): packets/s and Gbps through s1, with loss shown.

For each frame size (fixed 64/512/1500-byte frames made from the test packets, and the dataset's own size
mix) the frames are replayed at top speed through three paths on the same testbed: the Chimera pipeline
(conformance checked on every delivered frame), bare forwarding (s1 only redirects; eBPF), and the
software classifier host (†). Delivered rate = frames captured at h2 over the capture's span. Loss is
split as the harness always does: not sent (tcpreplay), dropped by h2's capture (kernel count), lost
(unexplained). Then a ladder of fixed rates finds the highest rate at which the Chimera path loses 0
packets unexplained (the number a peer testbed's 100 pps pacing is compared with).
"""

from __future__ import annotations

import dataclasses
import logging
import struct
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from chimera.data.pcap import read_pcap
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.experiments.config import ExperimentConfig
from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.stages.context import RunContext
from chimera.formats import tables as T
from chimera.report import throughput as report
from chimera.targets.base import Capability

log = logging.getLogger(__name__)
ETH = 14


class ThroughputSpec(BaseModel):
    """throughput: pps and Gbps through s1 per frame size, Chimera vs bare forwarding vs the software host,
    and the highest fixed rate with 0 packets lost unexplained."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sizes: list[int | Literal["mix"]] = Field([64, 512, 1500, "mix"], min_length=1,
                                              description="Ethernet frame bytes; mix = the dataset's own sizes")
    max_packets: int = Field(20000, ge=100, description="frames per run (test packets, resized)")
    ladder_pps: list[int] = Field([5000, 10000, 20000, 50000, 100000, 200000],
                                  description="fixed rates tried, lowest first, for the highest 0-loss rate")
    software: bool = Field(True, description="also through the software classifier host")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[int | str]) -> list[int | str]:
        bad = [x for x in v if x != "mix" and not 64 <= int(x) <= 1514]
        if bad:
            raise ValueError(f"frame sizes {bad} outside 64..1514 bytes (or 'mix')")
        return v



class ThroughputExperiment(ExperimentConfig):
    kind: Literal["throughput"] = "throughput"
    throughput: ThroughputSpec = ThroughputSpec()


def resize(frame: bytes, size: int) -> bytes:
    """The same headers, the frame cut or zero-padded to ``size`` bytes, the IP length field rewritten."""
    f = bytearray(frame[:size].ljust(size, b"\0"))
    if len(frame) >= ETH + 20 and frame[12:14] == b"\x08\x00":
        struct.pack_into("!H", f, ETH + 2, size - ETH)
    elif len(frame) >= ETH + 40 and frame[12:14] == b"\x86\xdd":
        struct.pack_into("!H", f, ETH + 4, size - ETH - 40)
    return bytes(f)


def _row(path: str, size: Any, mean_bytes: float, x: dict[str, Any]) -> dict[str, Any]:
    """One row of throughput.csv from a path's columns (a ReplayOutcome's or a ForwardingOutcome's)."""
    rate = x.get("recv_pps")
    return {"path": path, "frame": str(size), "mean_frame_bytes": mean_bytes, "replayed": x.get("replayed"),
            "verdicts": x.get("verdicts"), "not_sent": x.get("not_sent"),
            "dropped_by_capture": x.get("dropped_by_capture"), "lost": x.get("lost"),
            "offered_pps": x.get("sent_pps"), "delivered_pps": rate,
            "delivered_gbps": rate * mean_bytes * 8 / 1e9 if rate else None,
            "reference_mismatches": x.get("reference_mismatches")}


def run(ctx: RunContext) -> None:
    assert isinstance(ctx.cfg, ThroughputExperiment)
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
    rows: list[dict[str, Any]] = []
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
        rows.append(_row(f"Chimera ({target.name})", size, mean, res.columns()))
        if target.can(Capability.FORWARDING):
            with ctx.timed(f"forwarding:{size}"):
                fwd = target.run_forwarding(table, ctx.run.path, f"tput-fwd-{size}", replay=top)
            rows.append(_row("bare forwarding", size, mean, dataclasses.asdict(fwd)))
        if spec.software and target.can(Capability.SOFTWARE_HOST):
            with ctx.timed(f"software:{size}"):
                res = target.run_software(model_json, table, ctx.run.path, f"tput-sc-{size}", replay=top)
            rows.append(_row("software classifier host †", size, mean, res.columns()))
        log.info("[throughput] %s: %s", size, "; ".join(f"{r['path']} {(r['delivered_pps'] or 0) / 1e3:.0f} kpps, "
                                                         f"lost {r['lost']}" for r in rows[-3:]))
        T.THROUGHPUT.write(pd.DataFrame(rows), ctx.run.path)
    ladder = []
    table = mix_table if mix_table is not None else read_pcap(work / f"frames-{spec.sizes[0]}.pcap")
    for pps in sorted(spec.ladder_pps):
        with ctx.timed(f"ladder:{pps}"):
            x = target.run(art, table, ctx.run.path, f"ladder-{pps}",
                           replay=ctx.replay.model_copy(update={"mode": "pps", "pps": pps})).columns()
        ladder.append({"pps": pps, "offered_pps": x.get("sent_pps"), "lost": x.get("lost"),
                       "dropped_by_capture": x.get("dropped_by_capture"),
                       "reference_mismatches": x.get("reference_mismatches")})
        log.info("[throughput] ladder %d pps: offered %.0f pps, %s lost", pps, x.get("sent_pps") or 0, x.get("lost"))
        T.LADDER.write(pd.DataFrame(ladder), ctx.run.path)
        if x.get("lost"):
            break
    ok = [r for r in ladder if r["lost"] == 0]
    best = max(ok, key=lambda r: r["offered_pps"] or 0) if ok else None
    ctx.run.manifest.record(throughput={  # the rate actually offered: tcpreplay may fall short of the one asked
        **spec.model_dump(), "max_zero_loss_pps": round(best["offered_pps"]) if best and best["offered_pps"] else None,
        "max_zero_loss_requested_pps": best["pps"] if best else None, "target_detail": target.describe()})


KIND = Kind("throughput", "delivered pps/Gbps per frame size, Chimera vs bare forwarding vs the software host",
            ThroughputExperiment, run, report.render, (T.THROUGHPUT, T.LADDER), default_clock="switch",
            clocks=("switch",), needs_testbed=True)
