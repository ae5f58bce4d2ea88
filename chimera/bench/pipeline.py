"""Reference pipeline throughput: packets/s of run_reference on a compiled model (the ablation's full variant).

Writes results/bench-pipeline/<run>/ (every repeat, median and IQR). The ratio that transfers between
machines is the reference rate over the ingest rate measured in the same run (both CPU-bound Python/numba).
"""

from __future__ import annotations

from typing import TypedDict

import logging
import time

import numpy as np

from chimera.bench.results import BenchResult, Stat, bench_run, summary
from chimera.experiments.load import build_artifact
from chimera.reference.pipeline import run_reference

log = logging.getLogger(__name__)


class ReferenceResult(BenchResult):
    samples_pps: list[float]
    summary: Stat


class PipelineSummary(TypedDict):
    """What ``main`` returns (a night divides its rate by the ingest rate)."""
    packets: int
    pps: float
    pps_iqr: float
    samples: list[float]


def main(repeats: int = 5) -> PipelineSummary:
    built = build_artifact("ablation")
    art, table = built.art, built.data.ds.table
    run_reference(art, table.take(np.arange(min(1000, len(table)))))  # compile the jitted core
    pps = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_reference(art, table)
        pps.append(len(table) / (time.perf_counter() - t0))
    s = summary(pps)
    with bench_run("pipeline", {"repeats": repeats, "model": "ablation (first variant)", "packets": len(table)}) as run:
        run.manifest.put("result", ReferenceResult(samples_pps=pps, summary=Stat.model_validate(s)))
        (run.path / "report.md").write_text(f"# Reference pipeline\n\n{len(table)} packets, {repeats} repeats: median "
                                            f"{s['median'] / 1e6:.2f} M pkt/s (IQR {s['iqr'] / 1e6:.2f})\n")
    log.info("reference pipeline: %d packets, median %.2f M pkt/s over %d repeats (IQR %.2f; target >= 1 M); %s",
             len(table), s["median"] / 1e6, repeats, s["iqr"] / 1e6, run.final)
    return {"packets": len(table), "pps": s["median"], "pps_iqr": s["iqr"], "samples": pps}
