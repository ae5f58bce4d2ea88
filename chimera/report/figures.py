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


def stability(bins: pd.DataFrame, out: Path, train_hours: float, attack_at_hour: float | None) -> list[Path]:
    """F1 per time bin of each configuration on the simulated day, 95% bands, offered load shaded behind."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(10, 4.5))
    load = bins.drop_duplicates("bin")
    ax2 = ax.twinx()
    ax2.fill_between(load["t_mid_h"], 0, load["load_packets"], step="mid", color="0.85", zorder=0)
    ax2.set_ylabel("offered load (packets per bin)", color="0.5")
    ax2.set_ylim(0, max(1, float(load["load_packets"].max())) * 3)
    ax2.grid(False)
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    palette = dict(zip(bins["configuration"].unique(), sns.color_palette("deep")))
    for conf, d in bins.groupby("configuration", sort=False):
        ax.plot(d["t_mid_h"], d["f1"], marker="o", ms=3, label=conf, color=palette[conf])
        ax.fill_between(d["t_mid_h"], d["f1_lo"], d["f1_hi"], alpha=0.2, color=palette[conf], linewidth=0)
    ax.axvspan(0, train_hours, facecolor="none", hatch="//", edgecolor="0.6", linewidth=0, label="training hours")
    if attack_at_hour is not None:
        ax.axvline(attack_at_hour, color="0.3", ls=":", lw=1)
        ax.text(attack_at_hour, 0.02, " attack", fontsize=8, color="0.3", transform=ax.get_xaxis_transform())
    ax.set_xlabel("simulated time of day (h)")
    ax.set_ylabel("packet-level macro F1 (test flows)")
    ax.set_xlim(0, float(bins["t_mid_h"].max()) + 0.5)
    ax.set_ylim(max(0.0, float(bins["f1_lo"].min()) - 0.05) if bins["f1_lo"].notna().any() else 0, 1.0)
    ax.legend(loc="upper right", fontsize=8)
    return _save(fig, out, "stability_f1")


def cadence_heatmap(cells: pd.DataFrame, out: Path, eta: float | None, t_cp: float | None) -> list[Path]:
    """F1 over eta x T_cp, each cell annotated with its computed label; the operating point outlined."""
    sns.set_theme(style="white")
    m = cells.pivot(index="eta", columns="t_cp_s", values="f1_mean").sort_index(ascending=False)
    lab = cells.pivot(index="eta", columns="t_cp_s", values="label").reindex(index=m.index, columns=m.columns)
    annot = m.map(lambda v: f"{v:.3f}") + "\n" + lab.fillna("")
    fig, ax = plt.subplots(figsize=(1.6 * m.shape[1] + 2, 0.9 * m.shape[0] + 1.5))
    sns.heatmap(m, annot=annot, fmt="", cmap="viridis", ax=ax, cbar_kws={"label": "mean macro F1 after training"},
                annot_kws={"fontsize": 8})
    ax.set_xlabel("T_cp (simulated s)")
    ax.set_ylabel("eta (EMA step)")
    if eta is not None and t_cp is not None and eta in m.index and t_cp in m.columns:
        r, c = list(m.index).index(eta), list(m.columns).index(t_cp)
        ax.add_patch(plt.Rectangle((c, r), 1, 1, fill=False, edgecolor="red", lw=2.5))
    return _save(fig, out, "cadence_heatmap")
