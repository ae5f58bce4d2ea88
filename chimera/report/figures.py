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


def stability(bins: pd.DataFrame, out: Path, train_hours: float, attack_at_hour: float | None,
              title: str = "") -> list[Path]:
    """F1 per time bin of each configuration on the simulated day, 95% bands, offered load shaded behind;
    ``title`` says how the day was compressed and what T_cp is on both clocks."""
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
    if title:
        ax.set_title(title, fontsize=10)
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


def method_f1(df: pd.DataFrame, out: Path) -> list[Path]:
    """Macro-F1 per method and dataset (Table 1 as bars); software rows marked † in the label."""
    sns.set_theme(style="whitegrid")
    d = df[df["f1"].notna()].copy()
    d["method"] = d["method"] + d["kind"].map(lambda k: " †" if k == "software" else "")
    fig, ax = plt.subplots(figsize=(9, 0.35 * d["method"].nunique() * max(1, d["dataset"].nunique()) / 2 + 2))
    sns.barplot(data=d, y="method", x="f1", hue="dataset", ax=ax)
    ax.set(xlabel="packet-level macro-F1 (test split)", ylabel="", xlim=(0, 1))
    return _save(fig, out, "accuracy_f1")


def _front(s: pd.DataFrame) -> list[tuple[float, float]]:
    """The Pareto front: each point with a better F1 than every point with no more state."""
    front, best = [], -1.0
    for _, r in s.sort_values(["per_flow_bits", "f1"], ascending=[True, False]).iterrows():
        if r["f1"] > best:
            best = r["f1"]
            front.append((max(float(r["per_flow_bits"]), 1.0), float(r["f1"])))
    return front


def pareto(df: pd.DataFrame, out: Path) -> list[Path]:
    """F1 against per-flow state bits, one panel per dataset (classification rows only). Two fronts: over
    the methods that run as switch tables (solid) and over every method, software included (dashed)."""
    sns.set_theme(style="whitegrid")
    d = df[df["f1"].notna() & df["per_flow_bits"].notna() & (df["task"] == "classification")].copy()
    sets = list(d["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4), squeeze=False)
    for ax, name in zip(axes[0], sets):
        s = d[d["dataset"] == name]
        sns.scatterplot(data=s, x="per_flow_bits", y="f1", hue="method", style="kind", s=80, ax=ax,
                        legend=ax is axes[0][0], palette="tab20", hue_order=list(dict.fromkeys(d["method"])))
        for rows, style, label in ((s[s["kind"] != "software"], "-", "front: switch tables"),
                                   (s, "--", "front: every method")):
            f = _front(rows)
            if f:
                xs, ys = zip(*f)
                ax.step(xs, ys, where="post", color="black", lw=1, ls=style, label=label)
        ax.set(xscale="log", xlabel="per-flow state (bits, allocated/stored)", ylabel="macro-F1", title=name)
    if axes[0][0].get_legend() is not None:
        sns.move_legend(axes[0][0], "upper left", bbox_to_anchor=(0, -0.2), ncol=3, fontsize=7)
    return _save(fig, out, "pareto")


def input_scale(df: pd.DataFrame, out: Path) -> list[Path]:
    """F1 against window L per method; per-flow bits on a second axis (dashed)."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.lineplot(data=df, x="window", y="f1", hue="method", marker="o", ax=ax)
    ax2 = ax.twinx()
    bits = df.groupby(["method", "window"], as_index=False)["per_flow_bits"].first()
    for name, g in bits.groupby("method"):
        ax2.plot(g["window"], g["per_flow_bits"], ls="--", alpha=0.5, label=f"{name} bits")
    ax.set(xscale="log", xlabel="window L (packets per decision)", ylabel="macro-F1")
    ax.set_xticks(sorted(df["window"].unique()))
    ax.set_xticklabels([str(w) for w in sorted(df["window"].unique())])
    ax2.set(yscale="log", ylabel="per-flow bits (dashed)")
    ax2.grid(False)
    return _save(fig, out, "input_scale")


def hyper_dim_heatmap(df: pd.DataFrame, out: Path, bits: int, op: tuple[int, int] | None) -> list[Path]:
    """F1 over m x d_v at quantization ``bits`` per dataset; the operating point boxed, † over budget."""
    sets = list(df["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(4.5 * len(sets), 3.8), squeeze=False)
    for ax, name in zip(axes[0], sets):
        s = df[(df["dataset"] == name) & (df["bits"] == bits)]
        piv = s.pivot(index="m", columns="d_v", values="f1")
        over = s.pivot(index="m", columns="d_v", values="over_budget")
        annot = piv.map(lambda v: f"{v:.3f}") + over.map(lambda o: " †" if o else "")
        sns.heatmap(piv, annot=annot, fmt="", cmap="viridis", ax=ax, cbar=ax is axes[0][-1])
        if op is not None and op[0] in piv.index and op[1] in piv.columns:
            i, j = list(piv.index).index(op[0]), list(piv.columns).index(op[1])
            ax.add_patch(plt.Rectangle((j, i), 1, 1, fill=False, edgecolor="red", lw=2))
        ax.set(title=f"{name}, b = {bits}", xlabel="d_v", ylabel="m")
    return _save(fig, out, f"hyper_dim_b{bits}")


def roc_curves(curves: pd.DataFrame, aucs: pd.DataFrame, out: Path) -> list[Path]:
    sns.set_theme(style="whitegrid")
    sets = list(curves["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(4.5 * len(sets), 4), squeeze=False)
    for ax, name in zip(axes[0], sets):
        for det, g in curves[curves["dataset"] == name].groupby("detector", sort=False):
            auc = aucs[(aucs["dataset"] == name) & (aucs["detector"] == det)]["auc"].iloc[0]
            ax.plot(g["fpr"], g["tpr"], label=f"{det} (AUC {auc:.3f})")
        ax.plot([0, 1], [0, 1], color="grey", ls=":")
        ax.set(title=name, xlabel="false positive rate", ylabel="true positive rate")
        ax.legend(fontsize=7, loc="lower right")
    return _save(fig, out, "roc")


def resources_bits(df: pd.DataFrame, out: Path, budget: int) -> list[Path]:
    sns.set_theme(style="whitegrid")
    d = df.copy()
    d["row"] = d["method"] + " (" + d["where"] + ")"
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(d) + 1.5))
    sns.barplot(data=d, y="row", x="per_flow_bits", hue="method", dodge=False, ax=ax, legend=False)
    ax.axvline(budget, color="red", ls="--", label=f"budget {budget} bits")
    ax.set(xscale="log", xlabel="per-flow state (bits, allocated)", ylabel="")
    ax.legend()
    return _save(fig, out, "resources_per_flow")


def latency_boxplots(per: pd.DataFrame, out: Path) -> list[Path]:
    """Per-packet latency, log scale: in-switch and host-to-host, by offered load and path."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, title in ((axes[0], "switch_us", "in-switch (verdict header timestamps)"),
                           (axes[1], "host_us", "host to host (h1 -> h2 captures)")):
        d = per[per[col].notna() & (per[col] > 0)]
        if len(d):
            sns.boxplot(data=d, x="load", y=col, hue="path", ax=ax, showfliers=True, fliersize=1, log_scale=True)
        ax.set(title=title, ylabel="latency (µs, log)", xlabel="offered load")
    return _save(fig, out, "latency")


def throughput(df: pd.DataFrame, out: Path) -> list[Path]:
    """Delivered packets/s and Gbps per frame size and path."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    d = df.copy()
    d["delivered_kpps"] = d["delivered_pps"] / 1e3
    sns.barplot(data=d, x="frame", y="delivered_kpps", hue="path", ax=axes[0])
    axes[0].set(xlabel="frame size (bytes)", ylabel="delivered (kpps)", title="packets per second")
    sns.barplot(data=d, x="frame", y="delivered_gbps", hue="path", ax=axes[1], legend=False)
    axes[1].set(xlabel="frame size (bytes)", ylabel="delivered (Gbit/s)", title="bits per second")
    return _save(fig, out, "throughput")
