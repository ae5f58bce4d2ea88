"""Figures (seaborn), each saved as PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402


def _save(fig: plt.Figure, out: Path, name: str) -> list[Path]:
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths


def ablation(df: pd.DataFrame, out: Path) -> list[Path]:
    """Macro-F1 per variant, grouped; software-only (†) rows hatched."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(df) + 1.5))
    d = df.copy()
    d["row"] = d["variant"] + d["software_only"].map({True: " †", False: ""})
    sns.barplot(data=d, y="row", x="macro_f1", hue="group", dodge=False, ax=ax)
    for bar, sw in zip(ax.patches, d["software_only"]):
        if sw:
            bar.set_hatch("//")
    ax.set_xlabel("packet-level macro F1")
    ax.set_ylabel("")
    ax.set_xlim(0, 1)
    if d["group"].astype(bool).any():
        ax.legend(loc="lower right", fontsize=8)
    return _save(fig, out, "ablation_f1")


def confusion(df: pd.DataFrame, out: Path, title: str) -> list[Path]:
    order = list(dict.fromkeys(df["true"]))  # class order as in the dataset, not alphabetical
    m = df.pivot(index="true", columns="pred", values="count").reindex(index=order, columns=order)
    m = m.div(m.sum(axis=1).clip(lower=1), axis=0)
    fig, ax = plt.subplots(figsize=(1 + 0.7 * len(m), 0.8 + 0.6 * len(m)))
    sns.heatmap(m, annot=True, fmt=".2f", cmap="Blues", vmin=0, vmax=1, ax=ax, cbar=False)
    ax.set_title(title)
    return _save(fig, out, "confusion")


def per_class(df: pd.DataFrame, out: Path) -> list[Path]:
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(8, 0.4 * df["class"].nunique() + 1.5))
    sns.barplot(data=df, y="class", x="f1", hue="variant", ax=ax)
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, out, "per_class_f1")
