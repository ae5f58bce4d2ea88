"""``invoke compare RUN_A RUN_B``: two finished runs side by side, with the differences.

For each table both runs have (by kind: the ablation rows, per-class F1, the yardstick and stability
tables), the rows are matched on their key columns and every numeric column shown as A, B and B - A;
rows only one run has are listed. Partial and failed runs are refused (RunView).
"""

from __future__ import annotations

import pandas as pd

from chimera.report.common import table
from chimera.report.run import RunView

#: table -> key columns (rows are matched on these)
KEYS: dict[str, list[str]] = {
    "ablation.csv": ["variant"], "per_class.csv": ["variant", "class"], "accuracy.csv": ["dataset", "method"],
    "resources.csv": ["method", "where"], "input_scale.csv": ["dataset", "method", "window"],
    "hyper_dim.csv": ["dataset", "m", "d_v", "bits"], "roc.csv": ["dataset", "detector"],
    "stability.csv": ["configuration"], "cadence.csv": ["eta", "t_cp_s"],
}
#: columns worth comparing (metrics and counters); others (hashes, paths, timings) are left out
SKIP = ("seconds", "sha256", "artifact", "latency_host", "install_ms", "load_ms")


def _side_by_side(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, list[str]]:
    def numeric(s: pd.Series) -> bool:
        return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)

    num = [c for c in a.columns if c in b.columns and c not in keys and numeric(a[c]) and numeric(b[c])
           and not any(s in c for s in SKIP)]
    m = a[keys + num].merge(b[keys + num], on=keys, how="outer", suffixes=(" A", " B"), indicator=True)
    only = [f"{' / '.join(str(r[k]) for k in keys)}: only in {'A' if r['_merge'] == 'left_only' else 'B'}"
            for _, r in m[m["_merge"] != "both"].iterrows()]
    m = m[m["_merge"] == "both"].drop(columns="_merge")
    cols = list(keys)
    for c in num:
        m[f"{c} Δ"] = m[f"{c} B"] - m[f"{c} A"]
        cols += [f"{c} A", f"{c} B", f"{c} Δ"]
    return m[cols], only


def compare_runs(path_a: object, path_b: object) -> str:
    a, b = RunView.open(path_a), RunView.open(path_b)  # type: ignore[arg-type]
    lines = ["# Comparison", "", f"- A: `{a.path}` ({a.config.get('name')}, kind {a.kind}, target "
             f"{a.manifest.get('target')}, git `{(a.manifest.get('git') or {}).get('commit')}`)",
             f"- B: `{b.path}` ({b.config.get('name')}, kind {b.kind}, target {b.manifest.get('target')}, git "
             f"`{(b.manifest.get('git') or {}).get('commit')}`)", ""]
    if a.kind != b.kind:
        lines += [f"The runs are of different kinds ({a.kind} vs {b.kind}): only tables both have are compared.", ""]
    da, db = (a.manifest.get("dataset") or {}), (b.manifest.get("dataset") or {})
    if da.get("packets_sha256") != db.get("packets_sha256"):
        lines += [f"Different data: A {da.get('name')} ({da.get('packets')} packets), B {db.get('name')} "
                  f"({db.get('packets')} packets): differences are not only the code's.", ""]
    shown = 0
    for name, keys in KEYS.items():
        if not (a.has(name) and b.has(name)):
            continue
        ta, tb = a.table(name), b.table(name)
        if not set(keys) <= set(ta.columns) & set(tb.columns):
            continue
        t, only = _side_by_side(ta, tb, keys)
        if name == "per_class.csv":
            t = t[[c for c in t.columns if c in keys or c.startswith("f1")]]
        lines += [f"## {name}", "", table(t) if len(t) else "(no rows in common)", ""] + [f"- {o}" for o in only]
        lines += [""] if only else []
        shown += 1
    if not shown:
        lines += ["The two runs have no table in common to compare."]
    return "\n".join(lines)
