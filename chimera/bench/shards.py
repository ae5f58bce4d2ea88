"""Shards: the aggregate rate K testbeds at once hold with 0 packets lost, against K, per switch target.

For each switch target that runs here and each K: the quickstart model, a table of the quickstart's replayed
packets tiled to the target's bench size per shard, hashed over K testbeds (chimera.targets.sharded, local
processes, one sender CPU each), replayed at a ladder of per-shard rates. A step holds when no shard lost,
dropped or failed to send a frame and every verdict equals the sharded reference's. The aggregate 0-loss
rate at K is what the K senders put on the wire together at the fastest step that held (all shards' frames
over one span of h1's capture times); scaling efficiency is agg(K) / (K x agg(1)). On this
2-core machine every shard shares two cores with the others' senders, captures and switches: the
efficiency says what a machine of this size gains, not what a cluster of machines would.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from chimera.bench.install import profile, runnable_switches
from chimera.bench.results import BenchResult, bench_run
from chimera.experiments.load import build_artifact
from chimera.formats.rows import Cells
from chimera.targets.registry import target_class
from chimera.targets.sharded import sharded
from chimera.testbed.replay import ReplayConfig

log = logging.getLogger(__name__)
SHARDS = (1, 2)


class ShardsResult(BenchResult):
    rows: list[dict[str, Any]]           # shards.csv: per target and K, the aggregate 0-loss rate, the efficiency


def main(results_root: str | Path = "results", targets: tuple[str, ...] | None = None,
         shards: tuple[int, ...] = SHARDS) -> pd.DataFrame:
    runnable, skipped = runnable_switches(targets, "shards")
    params = {"targets": runnable, "shards": list(shards), "ladder": {t: list(profile(t).zero_loss_ladder)
                                                                       for t in runnable},
              "packets_per_shard": {t: profile(t).zero_loss_packets for t in runnable},
              "skipped": skipped}
    with bench_run("shards", params, results_root) as run:
        built = build_artifact("quickstart", data_root=Path("data"))
        base = built.data.replay_table
        steps: list[Cells] = []
        for t in runnable:
            cls = target_class(t)
            for k in shards:
                n = profile(t).zero_loss_packets * k
                table = base.take(np.resize(np.arange(len(base)), n))
                target = sharded(cls(build_dir=run.path / "build" / t), k)
                with target:
                    for pps in tqdm(profile(t).zero_loss_ladder, desc=f"{t} x{k}", unit="step"):
                        res = target.run(built.art, table, run.path / "runs" / f"{t}-x{k}-{pps}", f"x{k}-{pps}",
                                         replay=ReplayConfig(clock="switch", mode="pps", pps=pps))
                        assert res.outcome is not None and res.outcome.conformance is not None
                        a, c = res.outcome.accounting, res.outcome.conformance
                        held = a.lost + a.dropped_by_capture + a.not_sent == 0 and c.reference_mismatches == 0
                        steps.append({"target": t, "shards": k, "pps_per_shard": pps, "offered_pps": pps * k,
                                      "packets": n, "lost": a.lost, "dropped_by_capture": a.dropped_by_capture,
                                      "not_sent": a.not_sent, "reference_mismatches": c.reference_mismatches,
                                      "sent_pps": res.outcome.rates.sent_pps,
                                      "delivered_pps": res.outcome.rates.recv_pps, "held": held})
                        log.info("[shards] %s x%d at %d pps per shard: lost %d, dropped %d, %d differ: %s", t, k, pps,
                                 a.lost, a.dropped_by_capture, c.reference_mismatches, "held" if held else "NOT held")
                        if not held:
                            break
        df = pd.DataFrame(steps)
        df.to_csv(run.path / "steps.csv", index=False)
        out = summarize(df)
        one = out[out["shards"] == 1].set_index("target")["aggregate_zero_loss_pps"]
        out["efficiency"] = [r.aggregate_zero_loss_pps / (r.shards * one[r.target]) if one.get(r.target) else np.nan
                             for r in out.itertuples()]
        out.to_csv(run.path / "shards.csv", index=False)
        run.manifest.put("result", ShardsResult(rows=out.to_dict("records")))
        (run.path / "report.md").write_text("\n".join([
            "# Shards: the aggregate 0-loss rate against the number of testbeds", "",
            out.to_markdown(index=False, floatfmt=".3f"), "",
            "The aggregate rate is what the senders put on the wire together (every shard's frames over one span "
            "of h1's capture times) at the fastest step with 0 lost; lower_bound: every step held, so the limit "
            "lies above it, and where a step's sent rate falls short of the rate asked, the senders were the "
            "limit, not the switches.", "",
            "Every step:", "", df.to_markdown(index=False), ""]))
        log.info("[shards] %s", "; ".join(describe(r) for r in out.itertuples()))
    return out


def summarize(steps: pd.DataFrame) -> pd.DataFrame:
    """Per target and K: the fastest step that held, its aggregate sent rate, and the scaling efficiency
    agg(K) / (K x agg(1)). Where even the ladder's lowest step lost frames, the rate is below that step: NaN with
    ``below_lowest_step`` and the step named, never 0 pps (which read as a measured zero)."""
    rows = []
    for (t, k), g in steps.groupby(["target", "shards"], sort=False):
        ok = g[g["held"]]
        top = ok.loc[ok["sent_pps"].idxmax()] if len(ok) else None
        rows.append({"target": t, "shards": int(k),
                     "pps_per_shard_asked": int(top["pps_per_shard"]) if top is not None else np.nan,
                     "aggregate_zero_loss_pps": float(top["sent_pps"]) if top is not None else np.nan,
                     "lower_bound": bool(g["held"].all()), "below_lowest_step": top is None,
                     "lowest_step_pps_per_shard": int(g["pps_per_shard"].min())})
    out = pd.DataFrame(rows)
    one = out[out["shards"] == 1].set_index("target")["aggregate_zero_loss_pps"]
    out["efficiency"] = [r.aggregate_zero_loss_pps / (r.shards * one[r.target]) if one.get(r.target) else np.nan
                         for r in out.itertuples()]
    return out


def describe(r: Any) -> str:
    """One summary row in words: its rate, or that it lies below the lowest step."""
    if r.below_lowest_step:
        return f"{r.target} x{r.shards}: below the lowest step ({r.lowest_step_pps_per_shard} pps per shard lost frames)"
    eff = "" if r.efficiency != r.efficiency else f" (efficiency {r.efficiency:.2f})"
    return f"{r.target} x{r.shards}: {r.aggregate_zero_loss_pps:.0f} pps{eff}"
