"""``invoke compare RUN_A RUN_B``: two finished runs side by side, with the differences.

For each table both runs' kinds write (their records say which), the rows are matched on the table's key
columns and every numeric column shown as A, B and B - A; rows only one run has are listed. Partial and failed
runs are refused (RunView).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds import KINDS
from chimera.formats.tables import TableSchema
from chimera.report.common import table
from chimera.report.run import RunView
#: columns worth comparing (metrics and counters); others (hashes, paths, timings) are left out
SKIP = ("seconds", "sha256", "artifact", "latency_host", "install_ms", "load_ms")


_COUNTERS = ("reference_mismatches", "register_mismatches", "lost", "installs", "evictions", "hard_vetoes")


def _tables(*kinds: str) -> list[TableSchema]:
    """The tables of both runs' kinds (once each, in the kinds' order)."""
    out: list[TableSchema] = []
    for k in kinds:
        for t in KINDS[k].tables if k in KINDS else ():
            if t not in out:
                out.append(t)
    return out


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


def compare_runs(path_a: str | Path, path_b: str | Path) -> str:
    a, b = RunView.open(path_a), RunView.open(path_b)
    lines = ["# Comparison", "", f"- A: `{a.path}` ({a.config.get('name')}, kind {a.kind}, target "
             f"{a.manifest.target}, clock {a.manifest.clock}, git `{a.manifest.git.commit}`)",
             f"- B: `{b.path}` ({b.config.get('name')}, kind {b.kind}, target {b.manifest.target}, clock "
             f"{b.manifest.clock}, git `{b.manifest.git.commit}`)", ""]
    if a.kind != b.kind:
        lines += [f"The runs are of different kinds ({a.kind} vs {b.kind}): only tables both have are compared.", ""]
    da, db = a.manifest.dataset, b.manifest.dataset
    if (da.packets_sha256 if da else None) != (db.packets_sha256 if db else None):
        lines += [f"Different data: A {da.name if da else None} ({da.packets if da else 0} packets), B "
                  f"{db.name if db else None} ({db.packets if db else 0} packets): differences are not only the "
                  "code's.", ""]
    shown = 0
    for schema in _tables(a.kind, b.kind):
        if not (a.has(schema) and b.has(schema)) or not schema.metrics:
            continue
        ta, tb = a.table(schema), b.table(schema)
        keys = list(schema.keys)
        t, only = _side_by_side(ta, tb, keys)
        t = t[[c for c in t.columns if c in keys or c.split(" ")[0] in schema.metrics or
               c.split(" ")[0] in _COUNTERS]]
        lines += [f"## {schema.name}", "", table(t, schema) if len(t) else "(no rows in common)", ""]
        lines += [f"- {o}" for o in only]
        lines += [""] if only else []
        shown += 1
    if not shown:
        lines += ["The two runs have no table in common to compare."]
    return "\n".join(lines)
