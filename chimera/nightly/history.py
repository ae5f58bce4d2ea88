"""The nightly history: one CSV row per (nightly run, tracked metric), appended only by a complete run.

A corrupt history is an error naming the file, never a silent restart; the append is atomic (a copy with
the new rows replaces the file), so an interrupted nightly leaves the history as it was. Trend figures
(one per tracked metric, in the spirit of asv) are drawn from it.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from chimera.errors import ResultsError  # noqa: E402

COLUMNS = ["run_id", "time", "git", "code", "metric", "value", "iqr"]


def load_history(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as e:
        raise ResultsError(f"the nightly history {path} cannot be read ({e})",
                           f"repair or move {path} aside yourself (it is never restarted silently)") from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing or (len(df) and pd.to_numeric(df["value"], errors="coerce").isna().any()):
        raise ResultsError(f"the nightly history {path} is corrupt (missing columns {missing} or non-numeric values)",
                           f"repair or move {path} aside yourself (it is never restarted silently)")
    return df


def append_history(path: Path, rows: list[dict]) -> None:
    old = load_history(path)
    new = pd.concat([old, pd.DataFrame(rows, columns=COLUMNS)], ignore_index=True) if len(old) else \
        pd.DataFrame(rows, columns=COLUMNS)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    new.to_csv(tmp, index=False)
    os.replace(tmp, path)


def trend_figures(history: pd.DataFrame, out: Path) -> list[Path]:
    """One figure per tracked metric: its value per nightly run (with the IQR where recorded)."""
    out.mkdir(parents=True, exist_ok=True)
    sns.set_theme(style="whitegrid")
    paths = []
    for metric, g in history.groupby("metric"):
        g = g.reset_index(drop=True)
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.plot(range(len(g)), g["value"], marker="o")
        iqr = pd.to_numeric(g["iqr"], errors="coerce").fillna(0)
        ax.fill_between(range(len(g)), g["value"] - iqr / 2, g["value"] + iqr / 2, alpha=0.2)
        ax.set_xticks(range(len(g)))
        ax.set_xticklabels([str(r)[:13] for r in g["run_id"]], rotation=45, ha="right", fontsize=7)
        ax.set(title=str(metric), ylabel="value")
        safe = "".join(c if c.isalnum() else "_" for c in str(metric))
        p = out / f"trend_{safe}.png"
        fig.savefig(p, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths.append(p)
    return paths
