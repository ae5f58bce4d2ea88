"""Reference pipeline throughput: packets/s of run_reference on a compiled quickstart model."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from chimera.compile.build import compile_model
from chimera.experiments.config import load_experiment, resolve_variants
from chimera.experiments.runner import Cache, ROOT, get_model, prepare, resolve_dataset, _fires
from chimera.pipeline.reference import run_reference
from chimera.rules.spec import load_rules
from chimera.rules.weights import learn_soft_weights

log = logging.getLogger(__name__)


def build_artifact(name: str = "ablation", variant: int = 0, data_root: Path = Path("data"),
                   model: dict | None = None):
    """Train and compile one variant of an experiment; returns (artifact, dataset, prepared)."""
    cfg = load_experiment(name, {"model": model} if model else None)
    v = resolve_variants(cfg)[variant]
    ds = resolve_dataset(cfg.dataset, data_root)
    pp = prepare(ds, cfg.seed)
    rules = load_rules(ROOT / cfg.rules)
    W = learn_soft_weights(_fires(rules, pp.rule_keys[pp.train_rows]), pp.y(pp.train_rows), len(ds.classes),
                           seed=cfg.seed)
    model, _, _ = get_model(pp, v.model, cfg.seed, Cache())
    return compile_model(model, rules, W, v.compile, v.fusion, v.fusion.beta), ds, pp


def main(repeats: int = 5) -> dict[str, float]:
    art, ds, _ = build_artifact()
    table = ds.table
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
