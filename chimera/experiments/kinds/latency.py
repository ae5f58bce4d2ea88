"""The latency kind (the paper's latency figure): every packet's in-switch and host-to-host latency.

The experiment's first variant is trained and compiled once; the first ``max_packets`` test packets are
replayed at each offered load (``replay: pps``; inter-arrival features then follow the replay clock, and
the report says so) through the switch target and, with ``software: true``, through the software
classifier host (s1 redirects to ``sc``). Every packet's latency is kept (latency.csv.gz), with the
percentiles, loss and conformance per path and load (latency_summary.csv).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from chimera.experiments.config import ExperimentConfig
from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.stages.context import RunContext
from chimera.formats import tables as T
from chimera.report import latency as report
from chimera.targets.base import Capability, TargetResult

log = logging.getLogger(__name__)


class LatencySpec(BaseModel):
    """latency: per-packet in-switch and host-to-host latency at offered loads (fixed pps, original packets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    loads: dict[str, int] = Field(default_factory=lambda: {"low": 200, "high": 20000},
                                  description="load name -> replay rate (packets/s)")
    max_packets: int = Field(3000, ge=10, description="test packets replayed per load")
    software: bool = Field(True, description="also through the software classifier host (the † path)")

    @field_validator("loads")
    @classmethod
    def _loads(cls, v: dict[str, int]) -> dict[str, int]:
        bad = {k: x for k, x in v.items() if x < 1}
        if not v or bad:
            raise ValueError(f"give at least one load, each a rate >= 1 pps (got {v})")
        return v



class LatencyExperiment(ExperimentConfig):
    kind: Literal["latency"] = "latency"
    latency: LatencySpec = LatencySpec()


def _rows(res: TargetResult, path: str, load: str, pps: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    lat = res.latency
    sw = lat.switch_us if lat is not None else np.array([])
    hh = lat.host_us if lat is not None else np.array([])
    per = pd.DataFrame({"path": path, "load": load, "pps": pps, "packet": np.arange(len(hh)),
                        "switch_us": sw if len(sw) == len(hh) else np.nan, "host_us": hh})
    x = res.columns()
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
    assert isinstance(ctx.cfg, LatencyExperiment)
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
    ctx.run.manifest.record(latency=spec.model_dump())


KIND = Kind("latency", "every packet's in-switch and host-to-host latency at offered loads", LatencyExperiment, run,
            report.render, (T.LATENCY, T.LATENCY_SUMMARY), default_clock="switch", clocks=("switch",),
            needs_testbed=True)
