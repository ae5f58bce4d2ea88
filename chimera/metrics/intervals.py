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
