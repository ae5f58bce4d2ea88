"""The latency kind's run: every path timed in one run, interleaved, and what one path costs over another.

Each repeat replays the same packets at each load through every path in a random order (seeded by the
experiment's seed): the pipeline, the target's baseline programs on the same ports (mark_only: the verdict header
alone; bare: a plain redirect) and the software classifier host. A machine's drift then falls on every path
alike, and each repeat pairs them: the cost of a path over another is judged on per-repeat differences and
ratios with a bootstrap interval over repeats (chimera.metrics.intervals), never on one run against a fixed line.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from tqdm import tqdm

from chimera.experiments.kinds.latency import tables as T
from chimera.experiments.kinds.latency.config import LatencyExperiment
from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.stages.context import RunContext
from chimera.formats.rows import Cells
from chimera.metrics.intervals import bootstrap_mean
from chimera.targets.base import Capability
from chimera.testbed.outcome import Delivery, PerPacketLatency, ProgramTime
from chimera.testbed.steal import cpu_times, steal_share

log = logging.getLogger(__name__)

PIPELINE, SOFTWARE = "chimera", "software host"
#: the measures compared between paths (a trial's summary columns); NaN where a path has none (bare: no header)
MEASURES = ("switch_p50_us", "switch_p99_us", "host_p50_us", "host_p99_us", "program_ns")
#: (a, b): what a costs over b. The pipeline over each baseline; the header alone over the bare path; the
#: software host over the pipeline (the figure's "far slower")
PAIRS = ((PIPELINE, "mark_only"), (PIPELINE, "bare"), ("mark_only", "bare"), (SOFTWARE, PIPELINE))


def _percentiles(per: pd.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {}
    for col in ("switch_us", "host_us"):
        v = per[col].dropna().to_numpy()
        for q in (50, 90, 99):
            out[f"{col.replace('_us', '')}_p{q}_us"] = float(np.percentile(v, q)) if v.size else float("nan")
    p50, p99 = out["switch_p50_us"], out["switch_p99_us"]
    out["switch_tail"] = p99 / p50 if p50 > 0 else float("nan")
    return out


def _trial(program: str, path: str, load: str, pps: int, repeat: int, order: int, lat: PerPacketLatency | None,
           d: Delivery, ptime: ProgramTime | None, steal: float | None) -> tuple[pd.DataFrame, Cells]:
    hh = lat.host_us if lat is not None else np.array([])
    sw = lat.switch_us if lat is not None else np.array([])
    per = pd.DataFrame({"program": program, "path": path, "load": load, "pps": pps, "repeat": repeat,
                        "packet": np.arange(len(hh)), "switch_us": sw if len(sw) == len(hh) else np.nan,
                        "host_us": hh})
    row: Cells = {"program": program, "path": path, "load": load, "pps": pps, "repeat": repeat,
                           "order": order, "packets": len(hh), "lost": d.lost, "not_sent": d.not_sent,
                           "dropped_by_capture": d.dropped_by_capture, "reference_mismatches": d.reference_mismatches,
                           "sent_pps": d.sent_pps, "switch_pps": d.switch_pps,
                           "switch_timed": int(per["switch_us"].notna().sum()),
                           "host_timed": int(per["host_us"].notna().sum()), **_percentiles(per),
                           "program_ns": ptime.ns_per_run if ptime is not None else None,
                           "program_runs": ptime.runs if ptime is not None else None, "steal_share": steal}
    return per, row


def costs(summ: pd.DataFrame, seed: int, level: float = 0.95) -> pd.DataFrame:
    """What each path of PAIRS costs over the other at each load, per measure: the per-repeat difference and
    ratio, their mean and bootstrap interval over repeats; and the pipeline's switch tail (p99 / p50) alone."""
    rows = []
    for (load, pps), g in summ.groupby(["load", "pps"], sort=False):
        by = {p: x.set_index("repeat") for p, x in g.groupby("program")}
        for a, b in PAIRS:
            if a not in by or b not in by:
                continue
            for m in MEASURES:
                va, vb = by[a][m].astype(float), by[b][m].astype(float)
                both = (va.notna() & vb.notna()).reindex(va.index.union(vb.index), fill_value=False)
                idx = both[both].index
                if len(idx) == 0:
                    continue
                for stat, vals in (("difference", va[idx] - vb[idx]), ("ratio", va[idx] / vb[idx])):
                    est, lo, hi = bootstrap_mean(vals, level, seed=seed)
                    rows.append({"load": load, "pps": pps, "measure": m, "a": a, "b": b, "statistic": stat,
                                 "estimate": est, "lo": lo, "hi": hi, "repeats": len(idx)})
        if PIPELINE in by:
            tail = by[PIPELINE]["switch_tail"].astype(float).dropna()
            if len(tail):
                est, lo, hi = bootstrap_mean(tail, level, seed=seed)
                rows.append({"load": load, "pps": pps, "measure": "switch_tail", "a": PIPELINE, "b": "",
                             "statistic": "value", "estimate": est, "lo": lo, "hi": hi, "repeats": len(tail)})
    return pd.DataFrame(rows, columns=list(T.LATENCY_COST.columns))


def run(ctx: RunContext[LatencyExperiment]) -> None:
    spec = ctx.cfg.latency
    built = build_model(ctx, "latency")
    art, model_json, data = built.art, built.model_json, built.data
    tables = {load: data.ds.table.take(data.replay_rows[: spec.packets.get(load, spec.max_packets)])
              for load in spec.loads}
    target = ctx.target
    have = target.baselines() if target.can(Capability.BASELINES) else {}
    baselines = [b for b in spec.baselines if b in have]
    for b in spec.baselines:
        if b not in have:
            log.warning("[latency] the %s target has no baseline program %r: left out", target.name, b)
    timed = target.time_programs()
    if not timed:
        log.info("[latency] the %s target does not count its program's run time: program_ns left empty",
                 target.name)
    programs = [PIPELINE, *baselines] + ([SOFTWARE] if spec.software and target.can(Capability.SOFTWARE_HOST)
                                         else [])
    rng = np.random.default_rng(ctx.cfg.seed)
    per, summ = [], []
    trials = [(r, load, pps) for r in range(spec.repeats) for load, pps in spec.loads.items()]
    for r, load, pps in tqdm(trials, desc="latency repeats x loads", unit="block"):
        replay = ctx.replay.model_copy(update={"mode": "pps", "pps": pps})
        table = tables[load]
        for order, i in enumerate(rng.permutation(len(programs))):
            prog = programs[i]
            slug = f"latency-{prog.replace(' ', '-')}-{load}-r{r}"
            t0 = cpu_times()   # the hypervisor's steal over this trial (chimera.testbed.steal)
            with ctx.timed(f"{prog}:{load}"):
                if prog == PIPELINE:
                    res = target.run(art, table, ctx.run.path, slug, replay=replay)
                    p, s = _trial(prog, f"{target.name} switch", load, pps, r, order, res.latency,
                                  Delivery.of(res.outcome), res.program_time, steal_share(t0, cpu_times()))
                elif prog == SOFTWARE:
                    sw = target.run_software(model_json, table, ctx.run.path, slug, replay=replay)
                    p, s = _trial(prog, "software classifier host †", load, pps, r, order, sw.latency,
                                  Delivery.of(sw.outcome), None, steal_share(t0, cpu_times()))
                else:
                    base = target.run_baseline(art, table, ctx.run.path, slug, replay=replay, program=prog)
                    a = base.accounting
                    p, s = _trial(prog, f"{target.name} switch, {prog}", load, pps, r, order, base.latency,
                                  Delivery(a.replayed, a.verdicts, a.not_sent, a.dropped_by_capture, a.lost),
                                  base.program_time, steal_share(t0, cpu_times()))
            per.append(p)
            summ.append(s)
        log.debug("[latency] repeat %d at %s done", r, load)
    allp = pd.concat(per, ignore_index=True)
    allp[["switch_us", "host_us"]] = allp[["switch_us", "host_us"]].round(3)  # ns resolution: the clocks'
    summary = pd.DataFrame(summ)
    T.LATENCY.write(allp, ctx.run.path)
    T.LATENCY_SUMMARY.write(summary, ctx.run.path)
    cost = costs(summary, ctx.cfg.seed)
    T.LATENCY_COST.write(cost, ctx.run.path)
    for _, c in cost[(cost["measure"] == "host_p50_us") & (cost["statistic"] == "difference")].iterrows():
        log.info("[latency] %s at %s: %s − %s host p50 %+.3f µs [%.3f, %.3f] over %d repeats", target.name,
                 c["load"], c["a"], c["b"], c["estimate"], c["lo"], c["hi"], c["repeats"])
    ctx.record(spec)
