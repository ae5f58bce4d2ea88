"""The input_scale kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.input_scale import tables as T
from chimera.experiments.kinds.yardstick_render import _datasets
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_input_scale(df: pd.DataFrame, out: Path) -> list[Path]:
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
    return save(fig, out, "input_scale")


def render(run: RunView) -> list[str]:
    df = run.table(T.INPUT_SCALE)
    figs = plot_input_scale(df, run.figures_dir)
    lines = header(run, "input_scale") + _datasets(run)
    t = df.pivot_table(index="method", columns="window", values="f1", sort=False)
    t.columns = [f"F1 L={c}" for c in t.columns]
    b = df.pivot_table(index="method", columns="window", values="per_flow_bits", sort=False)
    b = b.round().astype("Int64")
    b.columns = [f"bits L={c}" for c in b.columns]
    lines += ["## F1 and per-flow bits by window L", "", table(t.join(b).reset_index(), [c for c in b.columns]), "",
              "Chimera: reference integer (bit-exact with the switch targets), per-flow bits as the eBPF object "
              "allocates them; baselines †: software, bits = the window's earlier packets' fields.", ""]
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
