"""Nightly checks: each compares one measured number with the golden baseline or the history and says
pass / regressed / improved / skipped, with the numbers.

- exact: reference F1 bit-identical when the code fingerprint equals the golden's (same seed, data, code);
  conformance (0 verdicts and 0 registers different from the reference) and 0 lost / unaccounted packets
  on every testbed run.
- tolerance: F1 >= golden - 0.01 (improved above golden + 0.01).
- band: a bench ratio within median +- max(k * IQR, 10%) of its history (of the golden while the history
  has fewer than 3 runs), in the direction that matters (ratios: higher is better; times: lower).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

F1_TOLERANCE = 0.01
BAND_K = 3.0
BAND_FLOOR = 0.10
MIN_HISTORY = 3
LOWER_IS_BETTER = ("install_ebpf_live_ms",)


@dataclass
class Check:
    name: str
    kind: str          # exact | tolerance | band
    status: str        # pass | regressed | improved | skipped
    value: Any = None
    expected: Any = None
    detail: str = ""

    def row(self) -> dict[str, Any]:
        return asdict(self)


def experiment_checks(measured: dict[str, Any], golden: dict[str, Any] | None, code: str) -> list[Check]:
    out: list[Check] = []
    gold = (golden or {}).get("experiments", {})
    same_code = golden is not None and golden.get("code") == code
    for key, m in measured.get("experiments", {}).items():
        if m.get("error"):
            out.append(Check(f"{key}: ran", "exact", "regressed", detail=m["error"][:300]))
            continue
        for what in ("reference_mismatches", "register_mismatches", "lost", "unaccounted"):
            vals = {v: x for v, x in (m.get(what) or {}).items() if x is not None}
            if vals:
                bad = {v: x for v, x in vals.items() if x != 0}
                out.append(Check(f"{key}: {what} == 0", "exact", "regressed" if bad else "pass",
                                 bad or 0, 0, ", ".join(f"{v}: {x}" for v, x in bad.items())))
        g = gold.get(key)
        for variant, f1 in (m.get("f1") or {}).items():
            gf = (g or {}).get("f1", {}).get(variant)
            if gf is None:
                out.append(Check(f"{key}/{variant}: F1 vs golden", "tolerance", "skipped", f1, None,
                                 "no golden value for this run (new experiment, variant or target)"))
                continue
            if key.endswith("@reference"):
                if same_code:
                    ok = f1 == gf
                    out.append(Check(f"{key}/{variant}: F1 bit-identical", "exact", "pass" if ok else "regressed",
                                     f1, gf, "" if ok else "same code, seed and data gave a different F1"))
                else:
                    out.append(Check(f"{key}/{variant}: F1 bit-identical", "exact", "skipped", f1, gf,
                                     f"code changed since the golden ({(golden or {}).get('code')} -> {code})"))
            status = "regressed" if f1 < gf - F1_TOLERANCE else "improved" if f1 > gf + F1_TOLERANCE else "pass"
            out.append(Check(f"{key}/{variant}: F1 >= golden - {F1_TOLERANCE}", "tolerance", status, f1, gf,
                             f"{f1 - gf:+.4f}"))
    for key in gold:
        if key not in measured.get("experiments", {}):
            out.append(Check(f"{key}: F1 vs golden", "tolerance", "skipped", detail=(
                measured.get("skipped", {}).get(key) or "not run in this nightly")))
    return out


def band(metric: str, history: pd.DataFrame, golden: dict[str, Any] | None) -> tuple[float, float, str] | None:
    past = pd.to_numeric(history.loc[history["metric"] == metric, "value"], errors="coerce").dropna()
    if len(past) >= MIN_HISTORY:
        med = float(past.median())
        iqr = float(np.subtract(*np.percentile(past, [75, 25])))
        src = f"history of {len(past)} runs"
    else:
        g = (golden or {}).get("benches", {}).get(metric)
        if not g:
            return None
        med, iqr, src = float(g["median"]), float(g.get("iqr") or 0.0), "golden"
    half = max(BAND_K * iqr, BAND_FLOOR * abs(med))
    return med - half, med + half, src


def bench_checks(measured: dict[str, Any], history: pd.DataFrame, golden: dict[str, Any] | None) -> list[Check]:
    out = []
    for metric, s in measured.get("benches", {}).items():
        if s.get("error"):
            out.append(Check(f"bench {metric}", "band", "skipped", detail=s["error"][:300]))
            continue
        b = band(metric, history, golden)
        v = float(s["median"])
        if b is None:
            out.append(Check(f"bench {metric}", "band", "skipped", v, None, "no history and no golden value yet"))
            continue
        lo, hi, src = b
        worse, better = (v > hi, v < lo) if metric in LOWER_IS_BETTER else (v < lo, v > hi)
        status = "regressed" if worse else "improved" if better else "pass"
        out.append(Check(f"bench {metric}", "band", status, v, f"[{lo:.4g}, {hi:.4g}]",
                         f"band from the {src} (median +- max({BAND_K:g} IQR, {BAND_FLOOR:.0%}))"))
    return out


def summary_markdown(checks: list[Check], meta: dict[str, Any]) -> str:
    """A summary fit for a CI comment or an e-mail: the verdict, then every check with its numbers."""
    df = pd.DataFrame([c.row() for c in checks])
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    verdict = "REGRESSED" if counts.get("regressed") else "PASS"
    lines = [f"# Nightly {meta.get('run_id')}: **{verdict}**", "",
             f"git `{meta.get('git')}`, code {meta.get('code')}, golden {meta.get('golden_git')} "
             f"(code {meta.get('golden_code')}); {len(df)} checks: " +
             ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), ""]
    if meta.get("interrupted"):
        lines += [f"**Interrupted** during {meta['interrupted']}: only the checks below ran; the history was not "
                  "appended.", ""]
    order = {"regressed": 0, "improved": 1, "skipped": 2, "pass": 3}
    if len(df):
        df = df.sort_values("status", key=lambda s: s.map(order), kind="stable")
        df["value"] = df["value"].map(lambda x: f"{x:.6g}" if isinstance(x, float) else x)
        df["expected"] = df["expected"].map(lambda x: f"{x:.6g}" if isinstance(x, float) else x)
        lines += [df.to_markdown(index=False), ""]
    return "\n".join(lines)
