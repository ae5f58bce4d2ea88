"""Confidence intervals over repeated measurements (seeds, repeats): the one place the t-interval is computed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats


def t_half_width(values: Iterable[float], level: float = 0.95) -> float:
    """Half-width of the t-interval at ``level`` of the mean of ``values`` (NaNs dropped; NaN below two values)."""
    a = np.asarray(list(values), float)
    a = a[~np.isnan(a)]
    if a.size < 2:
        return float("nan")
    return float(stats.t.ppf(1 - (1 - level) / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))


def ci95(values: Iterable[float]) -> float:
    """Half-width of the 95% t-interval of the mean of ``values`` (NaNs dropped; NaN below two values)."""
    return t_half_width(values, 0.95)


#: flow resamples per seed and method kept by a comparison run (each a macro-F1 on the same resampled flows for
#: every method: paired)
FLOW_DRAWS = 100


def flow_bootstrap_f1(y: np.ndarray, preds: Mapping[str, np.ndarray], flows: np.ndarray, draws: int = FLOW_DRAWS,
                      seed: int = 0) -> pd.DataFrame:
    """Packet-level macro-F1 of every method on ``draws`` resamples of the test flows (with replacement, the same
    resample for every method: the differences are paired), over the classes present in each resample, as the
    metric is. One row per (draw, method). The flows are the unit: packets of a flow are not independent."""
    y = np.asarray(y)
    uniq, idx = np.unique(np.asarray(flows), return_inverse=True)
    k = int(max(y.max(), *(int(np.max(p)) for p in preds.values())) + 1) if y.size else 1
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(draws):
        w = np.bincount(rng.integers(0, uniq.size, uniq.size), minlength=uniq.size)[idx].astype(float)
        support = np.bincount(y, weights=w, minlength=k)
        present = support > 0
        for m, pred in preds.items():
            pred = np.asarray(pred)
            tp = np.bincount(y[pred == y], weights=w[pred == y], minlength=k)
            called = np.bincount(np.clip(pred, 0, k - 1), weights=w, minlength=k)
            denom = support + called
            f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
            rows.append({"draw": d, "method": m, "f1": round(float(f1[present].mean()), 6)})
    return pd.DataFrame(rows)


def two_stage_interval(points: Mapping[int, float], draws: Mapping[int, np.ndarray], level: float = 0.95
                       ) -> tuple[float, float, float]:
    """(mean, lo, hi) of a per-seed quantity measured on one frozen test partition: the mean of the seeds'
    ``points`` with an interval at ``level`` of two terms added in quadrature. The seeds: a t-interval over their
    points (the training's randomness). The flows: every seed scores the same test flows, so their sampling is
    one term common to all seeds, not averaged away by them: ``draws[seed][d]`` is the quantity on flow resample
    ``d``, the same resample for every seed (chimera.metrics.intervals.flow_bootstrap_f1 draws them with one seed),
    and the term is the normal quantile times the spread over ``d`` of the seeds' mean. No interval below two
    seeds."""
    seeds = sorted(points)
    pts = np.asarray([points[s] for s in seeds], float)
    if pts.size < 2:
        return (float(pts.mean()) if pts.size else float("nan")), float("nan"), float("nan")
    seed_half = t_half_width(pts, level)
    b = min(len(draws[s]) for s in seeds)
    common = np.stack([np.asarray(draws[s], float)[:b] for s in seeds]).mean(axis=0)   # per flow resample
    flow_half = float(stats.norm.ppf(1 - (1 - level) / 2) * common.std(ddof=1)) if b >= 2 else float("nan")
    half = float(np.hypot(seed_half, flow_half))
    return float(pts.mean()), float(pts.mean()) - half, float(pts.mean()) + half


def bootstrap_mean(values: Iterable[float], level: float = 0.95, resamples: int = 4000,
                   seed: int = 0) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean of ``values`` (NaNs dropped) with a percentile bootstrap interval at ``level``,
    resampling the values themselves (repeats of one measurement, each paired within itself beforehand). A fixed
    ``seed``, so the same values give the same interval. (nan, nan, nan) below two values: no interval."""
    a = np.asarray(list(values), float)
    a = a[~np.isnan(a)]
    if a.size < 2:
        return (float(a.mean()) if a.size else float("nan")), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = a[rng.integers(0, a.size, (resamples, a.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return float(a.mean()), float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))
