"""The wide kind's report: each widened row's validation over the ladder, the rung kept and its test score."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.variants import tables as T
from chimera.report.common import accounting, figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def ladder(ablation: pd.DataFrame) -> pd.DataFrame:
    """The ``validation`` column ("lr=0.003 batch_size=512: 0.9283; ...") as rows: variant, lr, validation F1."""
    rows = []
    for _, r in ablation.iterrows():
        for part in str(r["validation"]).split("; "):
            label, score = part.rsplit(": ", 1)
            values = dict(kv.split("=", 1) for kv in label.split())
            rows.append({"variant": r["variant"], "lr": float(values["lr"]), "val_f1": float(score),
                         "kept": label == r["chosen"]})
    return pd.DataFrame(rows)


def plot_ladder(d: pd.DataFrame, out: Path) -> list[Path]:
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    sns.lineplot(data=d, x="lr", y="val_f1", hue="variant", marker="o", ax=ax)
    kept = d[d["kept"]]
    ax.scatter(kept["lr"], kept["val_f1"], s=120, facecolors="none", edgecolors="black", label="kept")
    ax.set_xscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("validation macro-F1")
    ax.legend(fontsize=8)
    return save(fig, out, "wide_ladder")


def render(run: RunView) -> list[str]:
    ablation = run.table(T.ABLATION)
    d = ladder(ablation)
    figs = [run.rel(p) for p in plot_ladder(d, run.figures_dir)]
    spec = run.manifest.config.get("wide", {})
    lines = header(run, "Chimera experiment: a widened search")
    cols = [c for c in ("variant", "macro_f1", "chosen", "at_edge", "edge_binds", "val_f1", "configs_tried",
                        "epochs_run", "stopped_by", "cap_reached_in", "executed_on") if c in ablation]
    lines += ["## Results (test split, packet level)", "", table(ablation[cols], T.ABLATION), "",
              f"Each row trained on every rung of the wide learning-rate ladder ({len(d) // max(len(ablation), 1)} "
              f"rates) under the budget's rules (patience, guard cap, balanced class weights, the fusion's "
              f"configured β), the best validation macro-F1 kept and scored once on the test split. It widens "
              f"the budgeted rows of `{spec.get('widens', '?')}` on the same dataset, split and seed. at_edge and "
              "edge_binds as the budget defines them, now on the wide ladder.", ""]
    wide = d.pivot_table(index="lr", columns="variant", values="val_f1").reset_index()
    lines += ["## Validation macro-F1 by learning rate", "", wide.to_markdown(index=False, floatfmt=".4f"), ""]
    lines += ["## Figures", "", *figure_lines(run, figs), ""]
    lines += accounting(run)
    lines += reproduce(run)
    return lines
