"""Reference pipeline throughput: packets/s of run_reference on a compiled model (the ablation's full variant)."""

from __future__ import annotations

import logging
import time

import numpy as np

from chimera.experiments.stages.compile import build_artifact
from chimera.reference.pipeline import run_reference

log = logging.getLogger(__name__)


def main(repeats: int = 5) -> dict[str, float]:
    built = build_artifact("ablation")
    art, table = built.art, built.data.ds.table
    run_reference(art, table.take(np.arange(min(1000, len(table)))))  # compile the jitted core
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_reference(art, table)
        best = min(best, time.perf_counter() - t0)
    pps = len(table) / best
    log.info("reference pipeline: %d packets in %.3f s (best of %d) = %.2f M pkt/s (target >= 1 M)",
             len(table), best, repeats, pps / 1e6)
    return {"packets": len(table), "seconds": best, "pps": pps}
