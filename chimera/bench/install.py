"""Δt_install: time to write a table version and flip the active register (eBPF maps, needs root).

Measures (a) one 10^4-entry table (the window table of a 100-centroid model) and
(b) a whole artifact (every table, incl. the 65,536-entry length table), each
written into the inactive version with one batch update per table, then flipped.
"""

from __future__ import annotations

import logging
import statistics
import struct
import tempfile
import time
from pathlib import Path

import numpy as np

from chimera.experiments.stages.compile import build_artifact
from chimera.targets.ebpf import require_available
from chimera.targets.ebpf.build import build_object
from chimera.targets.ebpf.loader import EbpfPipeline, table_images

log = logging.getLogger(__name__)


def main(repeats: int = 30) -> dict[str, float]:
    require_available()
    # C*C = 10^4 window entries
    art = build_artifact("quickstart", overrides={"model": {"centroids": 100, "epochs": 2}}).art
    with tempfile.TemporaryDirectory() as d:
        p = EbpfPipeline(build_object(art, Path(d)))
        try:
            p.install(art)
            img = table_images(art)["win_tbl"]
            win, act = p.obj.map("win_tbl"), p.obj.map("active")
            per = win.max_entries // 2
            one, full = [], []
            for i in range(repeats):
                t0 = time.perf_counter()
                win.update_batch((i % 2) * per, img)
                act.update(0, struct.pack("<I", i % 2))
                one.append(time.perf_counter() - t0)
                full.append(p.install(art))
        finally:
            p.close()
    r = {"entries": per, "one_table_ms": statistics.median(one) * 1e3, "one_table_p90_ms": float(np.percentile(one, 90)) * 1e3,
         "full_artifact_ms": statistics.median(full) * 1e3}
    log.info("Δt_install: %d-entry table + flip: median %.2f ms (p90 %.2f ms; goal <= 20 ms); whole artifact "
             "(%d tables) + flip: median %.2f ms", per, r["one_table_ms"], r["one_table_p90_ms"],
             len(table_images(art)), r["full_artifact_ms"])
    return r
