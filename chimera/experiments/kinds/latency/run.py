"""The latency kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from chimera.experiments.kinds.latency import tables as T
from chimera.experiments.kinds.latency.config import LatencyExperiment
from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.stages.context import RunContext
from chimera.targets.base import Capability, TargetResult
from chimera.testbed.outcome import Delivery

log = logging.getLogger(__name__)


def _rows(res: TargetResult, path: str, load: str, pps: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    lat = res.latency
    sw = lat.switch_us if lat is not None else np.array([])
    hh = lat.host_us if lat is not None else np.array([])
    per = pd.DataFrame({"path": path, "load": load, "pps": pps, "packet": np.arange(len(hh)),
                        "switch_us": sw if len(sw) == len(hh) else np.nan, "host_us": hh})
    x = Delivery.of(res.outcome)
    summ: dict[str, Any] = {"path": path, "load": load, "pps": pps, "packets": len(hh), "lost": x.lost,
                            "not_sent": x.not_sent, "dropped_by_capture": x.dropped_by_capture,
                            "reference_mismatches": x.reference_mismatches, "sent_pps": x.sent_pps,
                            "switch_pps": x.switch_pps}
    for col in ("switch_us", "host_us"):
        v = per[col].dropna().to_numpy()
        if v.size:
            for q in (50, 90, 99):
                summ[f"{col.replace('_us', '')}_p{q}_us"] = float(np.percentile(v, q))
    return per, summ


def run(ctx: RunContext[LatencyExperiment]) -> None:
    spec = ctx.cfg.latency
    built = build_model(ctx, "latency")
    art, model_json, data = built.art, built.model_json, built.data
    table = data.ds.table.take(data.replay_rows[: spec.max_packets])
    per, summ = [], []
    target = ctx.target
    for load, pps in spec.loads.items():
        replay = ctx.replay.model_copy(update={"mode": "pps", "pps": pps})
        with ctx.timed(f"switch:{load}"):
            res = target.run(art, table, ctx.run.path, f"latency-{load}", replay=replay)
        p, s = _rows(res, f"{target.name} switch", load, pps)
        per.append(p)
        summ.append(s)
        if spec.software and target.can(Capability.SOFTWARE_HOST):
            with ctx.timed(f"software:{load}"):
                res = target.run_software(model_json, table, ctx.run.path, f"latency-sc-{load}", replay=replay)
            p, s = _rows(res, "software classifier host †", load, pps)
            per.append(p)
            summ.append(s)
        log.info("[latency] %s at %d pps: %s", load, pps, "; ".join(
            f"{x['path']}: switch p50 {x.get('switch_p50_us', float('nan')):.1f} µs, host p50 "
            f"{x.get('host_p50_us', float('nan')):.1f} µs, lost {x.get('lost')}" for x in summ[-2:]))
    T.LATENCY.write(pd.concat(per, ignore_index=True), ctx.run.path)
    T.LATENCY_SUMMARY.write(pd.DataFrame(summ), ctx.run.path)
    ctx.record(spec)
