"""The latency kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.latency import tables as T
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView

#: how the report names a measure
MEASURE_TEXT = {"switch_p50_us": "in-switch p50 (µs)", "switch_p99_us": "in-switch p99 (µs)",
                "host_p50_us": "host-to-host p50 (µs)", "host_p99_us": "host-to-host p99 (µs)",
                "program_ns": "program run time (ns per run)", "switch_tail": "in-switch p99 / p50"}


def plot_latency_boxplots(per: pd.DataFrame, out: Path) -> list[Path]:
    """Per-packet latency, log scale: in-switch and host-to-host, by offered load and program, every repeat."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, col, title in ((axes[0], "switch_us", "in-switch (verdict header timestamps)"),
                           (axes[1], "host_us", "host to host (h1 -> h2 captures)")):
        d = per[per[col].notna() & (per[col] > 0)]
        if len(d):
            sns.boxplot(data=d, x="load", y=col, hue="program", ax=ax, showfliers=True, fliersize=1, log_scale=True)
        ax.set(title=title, ylabel="latency (µs, log)", xlabel="offered load")
    return save(fig, out, "latency")


def cost_table(cost: pd.DataFrame) -> pd.DataFrame:
    """One row per load, pair and measure: the difference and the ratio, each with its interval."""
    rows = []
    for (load, a, b, m), g in cost.groupby(["load", "a", "b", "measure"], sort=False):
        by = g.set_index("statistic")
        cell = {s: f"{by.loc[s, 'estimate']:.3f} [{by.loc[s, 'lo']:.3f}, {by.loc[s, 'hi']:.3f}]"
                for s in by.index}
        rows.append({"load": load, "a over b": f"{a} over {b}" if isinstance(b, str) and b else a, "measure": MEASURE_TEXT.get(m, m),
                     "a − b": cell.get("difference", "—"), "a / b": cell.get("ratio", cell.get("value", "—")),
                     "repeats": int(g["repeats"].iloc[0])})
    return pd.DataFrame(rows)


def render(run: RunView) -> list[str]:
    summ = run.table(T.LATENCY_SUMMARY)
    per = run.table(T.LATENCY)
    cost = run.table(T.LATENCY_COST)
    figs = plot_latency_boxplots(per, run.figures_dir)
    repeats = int(summ["repeat"].nunique()) if len(summ) else 0
    lines = header(run, "latency")
    lines += ["## What each path costs over another", "",
              f"{repeats} repeats; in each, every path at every load, in a random order. Per repeat, a's value "
              "minus b's (a − b) and a's over b's (a / b); shown: their mean over repeats with a 95% percentile "
              "bootstrap interval over repeats. A path with no verdict header (bare) has no in-switch time; the "
              "program's run time is the kernel's own count (BPF_ENABLE_STATS: run_time_ns / run_cnt).", "",
              table(cost_table(cost), ["repeats"]), "",
              "## Every trial", "", table(summ, T.LATENCY_SUMMARY), "",
              "Every packet's latency is in `latency.csv.gz`. In-switch: egress minus ingress timestamp the switch "
              "writes into the verdict header (the software classifier host's path has none: s1 only redirects). "
              "Host to host: h2's capture time minus h1's, through veth pairs and the kernel; the sender is pinned "
              "to one CPU. Replay at a fixed rate: inter-arrival features follow the replay clock, so verdicts "
              "(not latencies) differ from an original-timing run; conformance is still checked against the "
              "reference on the same frames.",
              "† the software classifier host: the float model behind s1, for what cannot run in a switch.", ""]
    lost = summ[summ["lost"].fillna(0) > 0]
    for _, r in lost.iterrows():
        lines.append(f"- {r['program']} at {r['load']} ({r['pps']} pps), repeat {r['repeat']}: {int(r['lost'])} "
                     "packets lost, unexplained by any tool's drop counter.")
    lines += ["", "## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
