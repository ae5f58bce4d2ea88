"""What moves across a drifting day, per time bin, against the training hours.

A classifier's inputs x (here: a packet's Map key read with the training length bins) and labels y can drift
three ways, and each calls for a different fix:

- covariate shift, p(x) moves: ``covariate`` = JS(p_bin(x) || p_train(x));
- label shift, p(y) moves: ``label`` = JS(p_bin(y) || p_train(y));
- concept shift, p(x | y) moves: ``concept`` = sum_y p_bin(y) JS(p_bin(x | y) || p_train(x | y)), over the
  classes present in both.

JS is the Jensen-Shannon divergence in bits (0: the same distribution, 1: disjoint). A histogram of finite
samples diverges from its source by chance: the training hours' own bins show that floor (their divergence
from the whole training window), so a later bin counts as drifted only above it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def js(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (bits) of two histograms (normalized here)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if p.sum() <= 0 or q.sum() <= 0:
        return float("nan")
    p, q = p / p.sum(), q / q.sum()
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return 0.5 * kl(p) + 0.5 * kl(q)


def _hist(x: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(np.asarray(x, np.int64), minlength=n).astype(np.float64)


def divergences(keys: np.ndarray, y: np.ndarray, ref_keys: np.ndarray, ref_y: np.ndarray, n_keys: int,
                n_classes: int) -> dict[str, float]:
    """Covariate, label and concept divergence of one sample of (key, label) from a reference sample."""
    joint = np.zeros((n_classes, n_keys))
    np.add.at(joint, (np.asarray(y, np.int64), np.asarray(keys, np.int64)), 1.0)
    ref = np.zeros((n_classes, n_keys))
    np.add.at(ref, (np.asarray(ref_y, np.int64), np.asarray(ref_keys, np.int64)), 1.0)
    py, ry = joint.sum(1), ref.sum(1)
    both = (py > 0) & (ry > 0)
    concept = float("nan")
    if both.any():
        w = py[both] / py[both].sum()
        concept = float(sum(wi * js(joint[c], ref[c]) for wi, c in zip(w, np.flatnonzero(both))))
    return {"covariate": js(joint.sum(0), ref.sum(0)), "label": js(py, ry), "concept": concept}


def drift_bins(t_h: np.ndarray, keys: np.ndarray, y: np.ndarray, train_hours: float, bin_h: float, day_h: float,
               n_keys: int, n_classes: int) -> pd.DataFrame:
    """One row per time bin: its packets and the three divergences from the training hours (t < train_hours)."""
    t_h = np.asarray(t_h, np.float64)
    ref = t_h < train_hours
    n_bins = max(1, int(np.ceil(day_h / bin_h - 1e-9)))
    b = np.minimum((t_h // bin_h).astype(np.int64), n_bins - 1)
    rows = []
    for i in range(n_bins):
        sel = b == i
        d = divergences(keys[sel], y[sel], keys[ref], y[ref], n_keys, n_classes) if sel.any() else \
            {"covariate": float("nan"), "label": float("nan"), "concept": float("nan")}
        rows.append({"bin": i, "t_mid_h": (i + 0.5) * bin_h, "packets": int(sel.sum()),
                     "in_training_hours": bool((i + 1) * bin_h <= train_hours), **d})
    return pd.DataFrame(rows)
