"""The hyper_dim kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from chimera.experiments.kinds.hyper_dim import tables as T
from chimera.experiments.kinds.yardstick_render import _datasets
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_hyper_dim_heatmap(df: pd.DataFrame, out: Path, bits: int, op: tuple[int, int] | None) -> list[Path]:
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
    return save(fig, out, f"hyper_dim_b{bits}")


def render(run: RunView) -> list[str]:
    df = run.table(T.HYPER_DIM)
    cfg: dict[str, Any] = run.config  # YAML in: the run's config as the manifest stores it
    model = cfg.get("model") or {}
    op = (int(model.get("features", 0)), int(model.get("d_v", 0)))
    figs = []
    for bits in sorted(df["bits"].unique()):
        figs += plot_hyper_dim_heatmap(df, run.figures_dir, int(bits), op)
    lines = header(run, "hyper_dim") + _datasets(run)
    budget = int(df["budget_bits"].iloc[0])
    t = df.pivot_table(index=["m", "d_v", "bits"], columns="dataset", values="f1").reset_index()
    t.columns = [c if c in ("m", "d_v", "bits") else f"{c} F1" for c in t.columns]
    first = df.drop_duplicates(["m", "d_v", "bits"]).set_index(["m", "d_v", "bits"])
    t = t.join(first[["per_flow_bits", "aggregated_state_kib", "budget_ratio", "over_budget"]], on=["m", "d_v", "bits"])
    t.insert(0, "config", [f"m={m}, d_v={d}, b={b}" + (" †" if o else "") for m, d, b, o in
                           zip(t["m"], t["d_v"], t["bits"], t["over_budget"])])
    lines += ["## Table 4: m x d_v x quantization bits", "", table(t.drop(columns=["over_budget"]), T.HYPER_DIM), "",
              f"† over the per-flow budget of {budget} bits (measured: the eBPF object's flow-slot allocation). "
              "aggregated_state_kib: per-flow bits x flow slots. Quantization bits b change table widths, not the "
              "per-flow state (the accumulators are int32).", ""]
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]),
              f"(operating point m={op[0]}, d_v={op[1]} boxed in red)", ""]
    lines += reproduce(run)
    return lines
