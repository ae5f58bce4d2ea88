"""Confidence intervals over repeated measurements (seeds, repeats): the one place the t-interval is computed."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from scipy import stats


def ci95(values: Iterable[float]) -> float:
    """Half-width of the 95% t-interval of the mean of ``values`` (NaNs dropped; NaN below two values)."""
    a = np.asarray(list(values), float)
    a = a[~np.isnan(a)]
    if a.size < 2:
        return float("nan")
    return float(stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))


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
