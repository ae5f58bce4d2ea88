"""The roc kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.roc import tables as T
from chimera.experiments.kinds.yardstick_render import _datasets
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_roc_curves(curves: pd.DataFrame, aucs: pd.DataFrame, out: Path) -> list[Path]:
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
    return save(fig, out, "roc")


def render(run: RunView) -> list[str]:
    aucs = run.table(T.ROC)
    curves = run.table(T.ROC_CURVES)
    figs = plot_roc_curves(curves, aucs, run.figures_dir)
    lines = header(run, "roc") + _datasets(run)
    wide = aucs.pivot_table(index=["detector", "where"], columns="dataset", values="auc", sort=False).reset_index()
    lines += ["## AUC per detector and dataset", "", table(wide, T.ROC), "",
              "Trained on benign training packets only; scored on every test packet with the injected attacks "
              "(scan, SYN flood, UDP DoS) positive. The integer table AutoEncoder uses only Chimera primitives "
              "(range/exact lookups, a SumReduce of 8-bit costs per latent code, a min); the float AutoEncoder and "
              "the z-score threshold are software. Both AutoEncoders' scores are relative to the benign median of "
              "windows holding as many packets (one lookup by flow position): a flow's first packets are cheap "
              "to reconstruct whatever they are. The attacks are the generator's: their separability here says "
              "nothing about real attacks.", ""]
    inverted = aucs[aucs["auc"] < 0.5]
    for _, r in inverted.iterrows():
        lines.append(f"- {r['detector']} on {r['dataset']}: AUC {r['auc']:.4f} < 0.5: it scores the attacks as *more* "
                     "normal than benign traffic. For a reconstruction-error detector that means the attack packets "
                     "are simpler (fixed sizes and flags) than benign ones, so they reconstruct better: a real "
                     "failure mode of MSE AutoEncoders, reported as measured.")
    lines += [""] if len(inverted) else []
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
