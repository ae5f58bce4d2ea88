"""The latency kind (the paper's latency figure): every packet's in-switch and host-to-host latency.

The experiment's first variant is trained and compiled once; the first ``max_packets`` test packets are
replayed at each offered load (``replay: pps``; inter-arrival features then follow the replay clock, and
the report says so) through the switch target and, with ``software: true``, through the software
classifier host (s1 redirects to ``sc``). Every packet's latency is kept (latency.csv.gz), with the
percentiles, loss and conformance per path and load (latency_summary.csv).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.stages.context import RunContext
from chimera.targets.base import TargetResult
from chimera.testbed.replay import ReplayConfig

log = logging.getLogger(__name__)


def _rows(res: TargetResult, path: str, load: str, pps: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    lat = res.latency_us or {}
    sw, hh = lat.get("switch_us", np.array([])), lat.get("host_us", np.array([]))
    per = pd.DataFrame({"path": path, "load": load, "pps": pps, "packet": np.arange(len(hh)),
                        "switch_us": sw if len(sw) == len(hh) else np.nan, "host_us": hh})
    x = res.extra
    summ: dict[str, Any] = {"path": path, "load": load, "pps": pps, "packets": len(hh),
                            **{k: x.get(k) for k in ("lost", "not_sent", "dropped_by_capture", "reference_mismatches",
                                                     "sent_pps", "switch_pps")}}
    for col in ("switch_us", "host_us"):
        v = per[col].dropna().to_numpy()
        if v.size:
            for q in (50, 90, 99):
                summ[f"{col.replace('_us', '')}_p{q}_us"] = float(np.percentile(v, q))
    return per, summ


def run(ctx: RunContext) -> None:
    spec = ctx.cfg.latency
    built = build_model(ctx, "latency")
    art, model_json, data = built.art, built.model_json, built.data
    table = data.ds.table.take(data.replay_rows[: spec.max_packets])
    per, summ = [], []
    target: Any = ctx.target
    for load, pps in spec.loads.items():
        target.replay_cfg = ReplayConfig(mode="pps", pps=pps)
        with ctx.timed(f"switch:{load}"):
            res = target.run(art, table, ctx.run.path, f"latency-{load}")
        p, s = _rows(res, f"{target.name} switch", load, pps)
        per.append(p)
        summ.append(s)
        if spec.software and hasattr(target, "run_software"):
            with ctx.timed(f"software:{load}"):
                res = target.run_software(model_json, table, ctx.run.path, f"latency-sc-{load}")
            p, s = _rows(res, "software classifier host †", load, pps)
            per.append(p)
            summ.append(s)
        log.info("[latency] %s at %d pps: %s", load, pps, "; ".join(
            f"{x['path']}: switch p50 {x.get('switch_p50_us', float('nan')):.1f} µs, host p50 "
            f"{x.get('host_p50_us', float('nan')):.1f} µs, lost {x.get('lost')}" for x in summ[-2:]))
    pd.concat(per, ignore_index=True).to_csv(ctx.run.path / "latency.csv.gz", index=False)
    pd.DataFrame(summ).to_csv(ctx.run.path / "latency_summary.csv", index=False)
    ctx.run.manifest["latency"] = spec.model_dump()
