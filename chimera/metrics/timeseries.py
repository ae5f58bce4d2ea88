"""F1 over time: per-bin macro-F1 with flow-bootstrap intervals, and labels computed from such a trace.

A bin's macro-F1 is over the classes present in the bin (chimera.metrics.
classification.macro_f1). Its 95% interval resamples the bin's *flows* with
replacement (packets of one flow are not independent), ``bootstrap`` times.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from chimera.metrics.classification import macro_f1


def _macro_f1_weighted(y: np.ndarray, pred: np.ndarray, w: np.ndarray, k: int) -> float:
    """macro_f1 of packets with multiplicities ``w`` (classes present: w > 0), via a weighted confusion."""
    keep = w > 0
    if not keep.any():
        return float("nan")
    yk, pk, wk = y[keep], pred[keep], w[keep]
    other = np.where((pk >= 0) & (pk < k), pk, k)  # a verdict outside the classes (NO_LABEL) counts as wrong
    cm = np.bincount(yk * (k + 1) + other, weights=wk, minlength=k * (k + 1)).reshape(k, k + 1)
    tp = np.diag(cm[:, :k])
    support = cm.sum(1)
    predicted = cm[:, :k].sum(0)
    present = support > 0
    prec = np.divide(tp, predicted, out=np.zeros(k), where=predicted > 0)
    rec = np.divide(tp, support, out=np.zeros(k), where=support > 0)
    f1 = np.divide(2 * prec * rec, prec + rec, out=np.zeros(k), where=(prec + rec) > 0)
    return float(f1[present].mean())


def binned_f1(t_s: np.ndarray, y: np.ndarray, pred: np.ndarray, flow: np.ndarray, bin_s: float, n_classes: int,
              bootstrap: int = 200, seed: int = 0, t_end_s: float | None = None) -> pd.DataFrame:
    """One row per time bin: start/middle (hours), packets, flows, macro-F1 and its 95% interval."""
    t_s, y, pred, flow = (np.asarray(a) for a in (t_s, y, pred, flow))
    end = float(t_s.max()) if t_end_s is None and t_s.size else float(t_end_s or 0.0)
    n_bins = max(1, int(np.ceil(end / bin_s - 1e-9)))
    b = np.minimum((t_s // bin_s).astype(np.int64), n_bins - 1)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_bins):
        sel = np.flatnonzero(b == i)
        f1, lo, hi, nf = float("nan"), float("nan"), float("nan"), 0
        if sel.size:
            yy, pp = y[sel].astype(np.int64), pred[sel].astype(np.int64)
            f1 = macro_f1(yy, pp)
            uf, inv = np.unique(flow[sel], return_inverse=True)
            nf = uf.size
            if bootstrap and nf > 1:
                draws = rng.integers(0, nf, size=(bootstrap, nf))
                boots = [_macro_f1_weighted(yy, pp, np.bincount(d, minlength=nf)[inv].astype(np.float64), n_classes)
                         for d in draws]
                lo, hi = (float(x) for x in np.nanpercentile(boots, [2.5, 97.5]))
        rows.append({"bin": i, "t_start_h": i * bin_s / 3600, "t_mid_h": (i + 0.5) * bin_s / 3600,
                     "packets": int(sel.size), "flows": int(nf), "f1": f1, "f1_lo": lo, "f1_hi": hi})
    return pd.DataFrame(rows)


def window_mean(bins: pd.DataFrame, start_h: float, end_h: float) -> float:
    """Mean F1 of the bins whose middle falls in [start_h, end_h)."""
    sel = bins[(bins["t_mid_h"] >= start_h) & (bins["t_mid_h"] < end_h)]["f1"].dropna()
    return float(sel.mean()) if len(sel) else float("nan")


def trace_stability(bins: pd.DataFrame, step_h: float | None, after_h: float = 0.0) -> dict[str, float | int | str]:
    """Labels computed from an F1 trace (never typed in).

    - ``noise``: the median half-width of the bins' 95% intervals (what a bin-to-bin move must exceed);
    - ``oscillations``: sign changes of ΔF1 between consecutive significant moves (|ΔF1| > 2 * noise), after
      ``after_h`` (the training hours);
    - ``response_h``: after a drift step at ``step_h``, hours until F1 stays within 2 * noise of its level
      over the last quarter of the day (NaN without a step);
    - ``label``: ``oscillating`` (>= 3 oscillations), ``slow`` (response over 6 h), else ``stable``.
    """
    b = bins.dropna(subset=["f1"])
    half = ((b["f1_hi"] - b["f1_lo"]) / 2).dropna()
    noise = float(half.median()) if len(half) else 0.0
    tail = b[b["t_mid_h"] >= after_h]
    d = np.diff(tail["f1"].to_numpy())
    sig = d[np.abs(d) > 2 * noise]
    osc = int(np.sum(np.sign(sig[1:]) != np.sign(sig[:-1]))) if sig.size > 1 else 0
    response = float("nan")
    if step_h is not None:
        last = b[b["t_mid_h"] >= b["t_mid_h"].max() * 0.75]["f1"]
        level = float(last.mean()) if len(last) else float("nan")
        post = b[b["t_mid_h"] >= step_h]
        off = np.abs(post["f1"].to_numpy() - level) > 2 * noise
        if off.any():
            k = int(np.flatnonzero(off)[-1]) + 1  # the first bin after which it stays within the band
            response = (float(post["t_mid_h"].iloc[k]) if k < len(post) else float(post["t_mid_h"].iloc[-1])) - step_h
        else:
            response = 0.0
    label = "oscillating" if osc >= 3 else ("slow" if response == response and response > 6 else "stable")
    return {"noise": noise, "oscillations": osc, "response_h": response, "label": label}


def block_indices(rng: np.random.Generator, n: int, block: int) -> np.ndarray:
    """One moving-block resample of ``n`` consecutive bins (Künsch's moving-block bootstrap): blocks of ``block``
    neighbours keep the bins' autocorrelation that an i.i.d. resample breaks. Blocks never wrap around: a
    circular resample joined the day's last bin to its first after the training hours, two ends of a trending
    series (issue 56)."""
    block = max(1, min(block, n))
    starts = rng.integers(0, n - block + 1, int(np.ceil(n / block)))
    return (starts[:, None] + np.arange(block)[None, :]).ravel()[:n]


def _flat_top(t: np.ndarray) -> np.ndarray:
    a = np.abs(t)
    return np.where(a <= 0.5, 1.0, np.where(a <= 1.0, 2 * (1 - a), 0.0))


def chosen_block(x: np.ndarray) -> int:
    """The block length (in bins) the data choose for a block bootstrap of the mean of ``x`` (NaNs dropped):
    Politis and White's automatic rule (2004, with Patton, Politis and White's 2009 correction) for the circular
    and moving-block bootstraps. The autocorrelation is read up to the first lag m after which K_N lags in a row
    stay inside 2 sqrt(log10(n) / n); a flat-top window of width 2m then gives G = sum |k| R(k) and g = sum R(k),
    and b = (2 G^2 / ((4/3) g^2))^(1/3) n^(1/3), at least 1 and at most min(3 sqrt(n), n / 3)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 4:
        return 1
    x = x - x.mean()
    var = float(np.dot(x, x) / n)
    if var == 0:
        return 1
    kn = max(5, int(np.ceil(np.sqrt(np.log10(n)))))
    max_lag = min(n - 1, int(np.ceil(np.sqrt(n))) + kn)
    acov = np.array([np.dot(x[: n - k], x[k:]) / n for k in range(max_lag + 1)])
    rho = acov / var
    bound = 2 * np.sqrt(np.log10(n) / n)
    m = max_lag
    for k in range(1, max_lag - kn + 2):
        if np.all(np.abs(rho[k: k + kn]) < bound):
            m = k - 1
            break
    big_m = min(2 * max(m, 1), max_lag)
    lags = np.arange(-big_m, big_m + 1)
    w = _flat_top(lags / big_m)
    r = acov[np.abs(lags)]
    g_big = float(np.sum(w * np.abs(lags) * r))
    g0 = float(np.sum(w * r))
    if g0 <= 0:
        return 1
    b = (2 * g_big ** 2 / ((4 / 3) * g0 ** 2)) ** (1 / 3) * n ** (1 / 3)
    return int(max(1, min(round(b), np.floor(3 * np.sqrt(n)), np.floor(n / 3))))


def seed_block_mean(per_seed: np.ndarray, block: int | None, bootstrap: int = 2000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean of a [seeds, bins] array (NaN: no value) with an interval at ``level`` of two terms in quadrature: the
    training seeds' spread, a t-interval over the seeds' means (none with one seed), and the day's, a moving-block
    bootstrap of the seeds' mean per bin (every seed sees the same day: its bins' ups and downs are common to the
    seeds, not averaged away by them), in blocks of ``block`` bins (None: chosen_block on that series). Returns
    (mean, lo, hi, block); (nan, nan, nan, 0) where nothing is finite."""
    from chimera.metrics.intervals import t_half_width
    from scipy import stats
    d = np.asarray(per_seed, np.float64)
    if d.ndim != 2 or not np.isfinite(d).any():
        return float("nan"), float("nan"), float("nan"), 0
    d = d[:, np.isfinite(d).any(0)]
    series = np.nanmean(d, axis=0)
    b = chosen_block(series) if block is None else max(1, int(block))
    rng = np.random.default_rng(seed)
    means = np.array([np.nanmean(series[block_indices(rng, series.size, b)]) for _ in range(bootstrap)])
    seed_means = np.nanmean(d, axis=1)
    seed_half = t_half_width(seed_means, level) if seed_means.size >= 2 else 0.0
    time_half = float(stats.norm.ppf(1 - (1 - level) / 2) * np.std(means, ddof=1)) if bootstrap >= 2 else 0.0
    half = float(np.hypot(seed_half, time_half))
    mid = float(np.nanmean(d))
    return mid, mid - half, mid + half, b


def _after(bins: pd.DataFrame, after_h: float) -> pd.Series:
    return bins[bins["t_mid_h"] >= after_h].set_index("bin")["f1"]


def _by_seed(cols: list[pd.Series]) -> np.ndarray:
    """[seeds, bins] from one F1 series per seed, aligned on the bin (NaN where a seed has none)."""
    return pd.concat(cols, axis=1).sort_index().to_numpy().T


def paired_by_seed(a: dict[int, pd.DataFrame], b: dict[int, pd.DataFrame], after_h: float, block: int | None,
                   bootstrap: int = 2000, seed: int = 0) -> tuple[float, float, float, int, int]:
    """Mean F1 difference a - b over the bins after ``after_h``, paired per training seed and time bin, with the
    seed-and-block interval of ``seed_block_mean``; returns (mean, lo, hi, seeds paired, block in bins)."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return float("nan"), float("nan"), float("nan"), 0, 0
    d = _by_seed([_after(a[s], after_h) - _after(b[s], after_h) for s in seeds])
    m, lo, hi, blk = seed_block_mean(d, block, bootstrap, seed)
    return m, lo, hi, len(seeds), blk


def f1_by_seed(bins: dict[int, pd.DataFrame], after_h: float, block: int | None, bootstrap: int = 2000,
               seed: int = 0) -> tuple[float, float, float]:
    """Mean F1 over the bins after ``after_h`` and training seeds, with the seed-and-block interval."""
    if not bins:
        return float("nan"), float("nan"), float("nan")
    return seed_block_mean(_by_seed([_after(b, after_h) for _, b in sorted(bins.items())]), block, bootstrap,
                           seed)[:3]


def seed_mean(bins: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and bin, the mean over training seeds of binned_f1's columns (no seed column: as is)."""
    if "seed" not in bins:
        if "configuration" in bins and bins.duplicated(["configuration", "bin"]).any():
            raise ValueError("bins of several runs per configuration without a seed column: label each run's bins "
                             "with its seed before averaging them")
        return bins
    num = [c for c in ("t_start_h", "t_mid_h", "f1", "f1_lo", "f1_hi", "load_packets", "packets", "flows") if c in bins]
    return bins.groupby(["configuration", "bin"], sort=False)[num].mean().reset_index()
