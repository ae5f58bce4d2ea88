"""Sweep speed-up: the same tasks one after another vs. on a local Ray instance with 2 workers.

A small hyper_dim sweep (m x d_v at two seeds, reference target) runs twice in
one bench run: sequentially in this process, then through Ray. Both paths run
each task single-threaded, so the merged tables must be bit-identical (checked,
reported). Ray's start-up is timed separately and not counted, and its two workers are
warmed by one task each first, as the sequential path is warmed by one task: a
cluster is started once and serves many sweeps. Goal (issue 14): >= 1.6x with 2 workers.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from chimera.bench.results import BenchResult, bench_run
from chimera.sweep.driver import merge, run_ray, run_sequential, start_ray
from chimera.sweep.plan import plan
from chimera.targets.registry import TRUTH

log = logging.getLogger(__name__)
GOAL = 1.6
CONFIG = {"name": "bench-sweep", "kind": "hyper_dim", "seed": 1, "target": TRUTH,
          "datasets": {"ciciot": {"synthetic": {"profile": "ciciot", "flows": 1500, "seed": 1, "duration_s": 40,
                                                "max_packets_per_flow": 120, "attacks": ["SCAN", "SYN_FLOOD"],
                                                "attack_share": 0.08}}},
          "rules": "rules/default.yaml", "model": {"centroids": 32, "window": 8, "epochs": 30},
          "sweep": {"features": [4, 8], "d_v": [4, 8], "bits": [8], "per_flow_budget_bits": 8192}}
SEEDS = [1, 2]


class SweepResult(BenchResult):
    tasks: int
    sequential_s: float
    ray_s: float
    ray_start_s: float
    speedup: float
    goal: float
    tables_identical: bool
    failed: int


def main(workers: int = 2, data_root: Path = Path("data")) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d, bench_run("sweep", {"config": CONFIG, "seeds": SEEDS,
                                                                "workers": workers}) as run:
        cfg = Path(d) / "bench-sweep.yaml"
        cfg.write_text(yaml.safe_dump(CONFIG))
        tasks = plan(str(cfg), SEEDS, None, TRUTH)
        run_sequential(tasks[:1], TRUTH, Path(d) / "warm", data_root)  # the dataset cache, built once
        t0 = time.perf_counter()
        seq = run_sequential(tasks, TRUTH, Path(d) / "seq", data_root)
        t_seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        ray = start_ray(None, workers)
        t_start = time.perf_counter() - t0
        try:
            # warm the workers as the sequential path was warmed (imports, numba JIT): a cluster serves many sweeps
            run_ray(tasks[:workers], TRUTH, Path(d) / "ray-warm", data_root, None, retries=0)
            t0 = time.perf_counter()
            par = run_ray(tasks, TRUTH, Path(d) / "ray", data_root, None, retries=0)
            t_ray = time.perf_counter() - t0
        finally:
            ray.shutdown()
        a, b = merge(seq), merge(par)
        identical = sorted(a) == sorted(b) and all(
            a[n].drop(columns=["seconds"], errors="ignore").equals(b[n].drop(columns=["seconds"], errors="ignore"))
            for n in a)
        r = {"tasks": len(tasks), "sequential_s": t_seq, "ray_s": t_ray, "ray_start_s": t_start,
             "speedup": t_seq / t_ray, "goal": GOAL, "tables_identical": identical,
             "failed": sum(o.status != "ok" for o in seq + par)}
        run.manifest.put("result", SweepResult(**r))
        pd.DataFrame([r]).to_csv(run.path / "sweep.csv", index=False)
        (run.path / "report.md").write_text(
            "# Sweep speed-up\n\n"
            f"{len(tasks)} hyper_dim tasks (m x d_v x 2 seeds, reference target): sequential {t_seq:.1f} s, "
            f"Ray with {workers} workers {t_ray:.1f} s (start-up {t_start:.1f} s and one warm-up task per worker, "
            f"not counted; the sequential path is warmed by one task too): "
            f"**{r['speedup']:.2f}x** (goal >= {GOAL}x). Merged tables bit-identical (timing columns aside): "
            f"{identical}.\n")
    log.info("sweep: %d tasks, sequential %.1f s, Ray (%d workers) %.1f s: %.2fx (goal >= %.1fx); tables identical: "
             "%s; results %s", len(tasks), t_seq, workers, t_ray, r["speedup"], GOAL, identical, run.final)
    return r
