"""The cadence kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.cadence import tables as T
from chimera.experiments.kinds.cadence.config import CadenceSection
from chimera.report.common import figure_lines, header, label_simulated, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_cadence_heatmap(cells: pd.DataFrame, out: Path, eta: float | None, t_cp: float | None) -> list[Path]:
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
    return save(fig, out, "cadence_heatmap")


COLUMNS = ["eta", "eta_effective", "t_cp_s", "memory_depth_pkts", "memory_depth_sim_s", "budget_ratio", "installs",
           "churn_per_install", "f1_mean", "f1_last", "oscillations", "response_h", "label"]


def _kappa(k: pd.DataFrame) -> list[str]:
    best = int(k["agree"].max())
    fit = k[k["agree"] == best]
    n = int(k["cells"].iloc[0])
    lo, hi = float(fit["kappa"].min()), float(fit["kappa"].max())
    lines = [f"The paper's condition eta < 1 / (1 + kappa * T_cp / Δt_install) classifies at best {best} of {n} cells "
             f"as measured (stable = not oscillating), for kappa in [{lo:.3g}, {hi:.3g}]."]
    if fit["predicted_stable"].eq(n).all():
        lines.append("At those kappa it predicts every cell stable: in these measurements the condition does not bind "
                     "(no cell oscillated, or none that it could single out).")
    return lines


def render(run: RunView) -> list[str]:
    cells = run.table(T.CADENCE)
    op = (run.manifest.get("stability", CadenceSection) or CadenceSection()).operating_point
    figs = plot_cadence_heatmap(cells, run.figures_dir, op.eta, op.t_cp_s)
    lines = header(run, "update cadence (eta x T_cp)")
    lines += ["eta: the dataplane EMA step (fast timescale; realized as 2^-a + 2^-b, eta_effective), memory depth "
              "1/eta packets; T_cp: the slow loop's period in simulated seconds. Labels are computed from each cell's "
              "F1 trace (chimera.metrics.timeseries.trace_stability): oscillations = sign changes of ΔF1 above twice "
              "the bins' noise, response = hours after the drift step until F1 settles.", ""]
    shown, sim_note = label_simulated(cells[[c for c in (*COLUMNS, "install_simulated") if c in cells]])
    lines += ["## Table", "", table(shown.drop(columns="install_simulated", errors="ignore"), T.CADENCE), "",
              *sim_note, *([""] if sim_note else [])]
    if "diff_vs_static_map" in cells:
        iv = cells[["eta", "t_cp_s", "seeds", "f1_mean", "f1_mean_lo", "f1_mean_hi", "diff_vs_static_map",
                    "diff_vs_static_map_lo", "diff_vs_static_map_hi"]].copy()
        better = int((iv["diff_vs_static_map_lo"] > 0).sum())
        worse = int((iv["diff_vs_static_map_hi"] < 0).sum())
        lines += ["## Intervals: each cell against Static-Map", "",
                  f"Over {int(iv['seeds'].max())} training seeds, paired per seed and time bin with Static-Map (no "
                  "prior, no installs) of the same seed; 95% intervals resample the seeds and "
                  f"{(run.config.get('stability') or {}).get('block_hours') or 'data-chosen'}-hour blocks of "
                  f"bins (as in stability24h). {better} of {len(iv)} cells beat Static-Map, {worse} fall below it, "
                  f"the rest show no difference.", "", table(iv, T.CADENCE), ""]
    lines += ["## F1 over eta x T_cp", "", *figure_lines(run, [run.rel(p) for p in figs]),
              f"(operating point: eta {op.eta}, T_cp {op.t_cp_s} s)", ""]
    if run.has(T.KAPPA):
        lines += ["## The stability condition", "", *_kappa(run.table(T.KAPPA)), ""]
    if "reference_mismatches" in cells:
        lines += [f"Conformance: {int(cells['reference_mismatches'].sum())} verdicts differ from the reference over "
                  "all cells.", ""]
    lines += reproduce(run)
    return lines
