"""Intervals over day realizations: several generated days, each run with several training seeds.

One generated day is one draw of the traffic: its seeds share its flows and its bins' ups and downs, so a
seed-and-block interval (chimera.metrics.timeseries.seed_block_mean) says how sure we are about *that* day. A
claim about days of this kind needs the spread between days too. With two or more day realizations the day is
the independent unit: the interval is a t-interval over the days' means (each the mean over its seeds and its
bins after the training hours), with D - 1 degrees of freedom. It holds the between-day spread and, inside each
day's mean, that day's seed and time noise, so no second term is added; the block length is still chosen (and
reported) on the mean series, and does not enter. With one day it is the seed-and-block interval, as before.

A unit is a training seed (one day) or a (day, seed) pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd

from chimera.metrics.intervals import t_half_width
from chimera.metrics.timeseries import _after, _by_seed, chosen_block, seed_block_mean

Unit = int | tuple[int, int]
#: one unit type per mapping: training seeds, or (day, seed) pairs
K = TypeVar("K", int, tuple[int, int])


def day_of(unit: Unit) -> int:
    """The day realization of a unit (0: a bare training seed, one day)."""
    return unit[0] if isinstance(unit, tuple) else 0


def day_seed_block_mean(per_unit: np.ndarray, days: Sequence[int], block: int | None, bootstrap: int = 2000,
                        seed: int = 0, level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean of a [units, bins] array (NaN: no value) with its interval at ``level``; ``days``: each row's day.
    One day: ``seed_block_mean``. Two or more: the t-interval over the days' means (see the module's docstring).
    Returns (mean, lo, hi, block in bins)."""
    d = np.asarray(per_unit, np.float64)
    day = np.asarray(days)
    if len(set(day.tolist())) < 2:
        return seed_block_mean(d, block, bootstrap, seed, level)
    if d.ndim != 2 or not np.isfinite(d).any():
        return float("nan"), float("nan"), float("nan"), 0
    d = d[:, np.isfinite(d).any(0)]
    means = np.array([np.nanmean(d[day == k]) for k in sorted(set(day.tolist()))])
    means = means[np.isfinite(means)]
    series = np.nanmean(d, axis=0)
    b = chosen_block(series) if block is None else max(1, int(block))
    mid = float(np.mean(means))
    half = t_half_width(means, level) if means.size >= 2 else float("nan")
    return mid, mid - half, mid + half, b


def paired_by_unit(a: Mapping[K, pd.DataFrame], b: Mapping[K, pd.DataFrame], after_h: float,
                   block: int | None, bootstrap: int = 2000, seed: int = 0
                   ) -> tuple[float, float, float, int, int, int]:
    """Mean F1 difference a - b over the bins after ``after_h``, paired per unit and time bin, with the interval
    of ``day_seed_block_mean``; returns (mean, lo, hi, units paired, days, block in bins)."""
    units = sorted(set(a) & set(b), key=lambda u: (day_of(u), u if isinstance(u, int) else u[1]))
    if not units:
        return float("nan"), float("nan"), float("nan"), 0, 0, 0
    d = _by_seed([_after(a[u], after_h) - _after(b[u], after_h) for u in units])
    days = [day_of(u) for u in units]
    m, lo, hi, blk = day_seed_block_mean(d, days, block, bootstrap, seed)
    return m, lo, hi, len(units), len(set(days)), blk


def f1_by_unit(bins: Mapping[K, pd.DataFrame], after_h: float, block: int | None, bootstrap: int = 2000,
               seed: int = 0) -> tuple[float, float, float]:
    """Mean F1 over the bins after ``after_h`` and the units, with the interval of ``day_seed_block_mean``."""
    if not bins:
        return float("nan"), float("nan"), float("nan")
    units = sorted(bins, key=lambda u: (day_of(u), u if isinstance(u, int) else u[1]))
    return day_seed_block_mean(_by_seed([_after(bins[u], after_h) for u in units]), [day_of(u) for u in units],
                               block, bootstrap, seed)[:3]
