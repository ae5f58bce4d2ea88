"""The pseudo_grid kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.pseudo_grid import tables as T
from chimera.experiments.kinds.pseudo_grid.config import PseudoGridSection
from chimera.report import fmt
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_grid(grid: pd.DataFrame, out: Path) -> list[Path]:
    """Each arm's difference from its control over gate x cap, on one colour scale centred on 0; the default cell
    outlined, the chosen one starred."""
    arms = list(dict.fromkeys(grid["arm"]))
    sns.set_theme(style="white")
    lim = float(grid["diff"].abs().max()) or 1e-4
    fig, axes = plt.subplots(1, len(arms), figsize=(4.6 * len(arms) + 1.2, 4.4), squeeze=False,
                             constrained_layout=True)
    for k, (ax, arm) in enumerate(zip(axes[0], arms)):
        d = grid[grid["arm"] == arm]
        m = d.pivot(index="gate_quantile", columns="max_entries", values="diff").sort_index(ascending=False)
        star = d.pivot(index="gate_quantile", columns="max_entries", values="chosen").reindex_like(m)
        annot = m.map(lambda v: f"{v:+.4f}") + star.map(lambda c: " *" if pd.notna(c) and bool(c) else "")
        last = k == len(arms) - 1
        sns.heatmap(m, annot=annot, fmt="", cmap="RdBu", vmin=-lim, vmax=lim, ax=ax, annot_kws={"fontsize": 8},
                    cbar=last, cbar_kws={"label": "mean F1 − the arm's control"} if last else None)
        for _, r in d[d["default"]].iterrows():
            i, j = list(m.index).index(r["gate_quantile"]), list(m.columns).index(r["max_entries"])
            ax.add_patch(plt.Rectangle((j, i), 1, 1, fill=False, edgecolor="black", lw=2.0))
        ax.set_title(f"{arm} − {d['control'].iloc[0]}")
        ax.set_xlabel("churn cap (global entries per install)")
        ax.set_ylabel("confidence gate (quantile)" if k == 0 else "")
    return save(fig, out, "pseudo_grid")


def cell_words(r: pd.Series) -> str:
    return f"gate {r['gate_quantile']:g}, cap {int(r['max_entries'])}"


def arm_sentence(d: pd.DataFrame) -> str:
    """One arm of a validation grid (its rows of pseudo_grid.csv): the range of its differences, how many cells
    are measurably apart from zero, what the rule keeps against the default, and where that sits in the grid."""
    c, dflt = d[d["chosen"]].iloc[0], d[d["default"]].iloc[0]
    kept = "the default" if bool(c["default"]) else cell_words(c)
    apart = int(((d["lo"] > 0) | (d["hi"] < 0)).sum())
    out = (f"{c['arm']} − {c['control']} runs from {fmt.signed(d['diff'].min())} to {fmt.signed(d['diff'].max())} "
           f"over the cells, {apart} of {len(d)} measurably apart from zero; the rule keeps {kept} "
           f"({fmt.signed(c['diff'])} {fmt.interval(c['lo'], c['hi'])})")
    if not bool(c["default"]):
        out += (f", the default ({cell_words(dflt)}) {fmt.signed(dflt['diff'])} "
                f"{fmt.interval(dflt['lo'], dflt['hi'])}")
    edge = str(c["at_edge"]) if pd.notna(c["at_edge"]) else ""
    if edge:
        out += f". At an end of the grid: {edge}" + ("; **it binds**: the grid must widen" if bool(c["edge_binds"])
                                                    else "")
    return out + "."


def choice_lines(grid: pd.DataFrame, role: str) -> list[str]:
    """One sentence per arm: what validation chose, against its default, and whether the choice sits at an edge."""
    if role != "validation":
        return ["These are held-out days: nothing was chosen on them; the cells run are the loop's default and what "
                "a validation run chose."]
    return [f"- {arm_sentence(d)}" for _, d in grid.groupby("arm", sort=False)]


COLUMNS = ["arm", "gate_quantile", "max_entries", "default", "chosen", "f1_mean", "diff", "lo", "hi", "units",
           "installs", "churn_total"]


def render(run: RunView) -> list[str]:
    grid = run.table(T.GRID)
    sec = run.manifest.get("stability", PseudoGridSection) or PseudoGridSection()
    figs = plot_grid(grid, run.figures_dir)
    lines = header(run, "the pseudo-label loop's gate x churn cap")
    lines += [f"Role: **{sec.role}** days {sec.days}, training seeds {sec.seeds}. Each arm runs at every cell; "
              "its difference is its mean macro F1 after the training hours minus its control's, paired per day, "
              "seed and time bin, with a 95% interval over the days' means. The choice rule "
              "(chimera.experiments.kinds.pseudo_grid.run.choose): the highest mean difference, an exact tie "
              "keeping the default.", "", *choice_lines(grid, sec.role), "",
              "## Table", "", table(grid[[c for c in COLUMNS if c in grid]], T.GRID), "",
              "## Differences over the grid", "", *figure_lines(run, [run.rel(p) for p in figs]),
              "(black: the loop's default cell; *: the cell validation chose)", ""]
    if "reference_mismatches" in grid:
        lines += [f"Conformance: {fmt.n(int(grid['replayed'].sum()))} frames replayed, "
                  f"{fmt.n(int(grid['reference_mismatches'].sum()))} verdicts differ from the reference over all "
                  "cells.", ""]
    return lines + reproduce(run)
