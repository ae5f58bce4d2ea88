"""The latency kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.latency import tables as T
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_latency_boxplots(per: pd.DataFrame, out: Path) -> list[Path]:
    """Per-packet latency, log scale: in-switch and host-to-host, by offered load and path."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, title in ((axes[0], "switch_us", "in-switch (verdict header timestamps)"),
                           (axes[1], "host_us", "host to host (h1 -> h2 captures)")):
        d = per[per[col].notna() & (per[col] > 0)]
        if len(d):
            sns.boxplot(data=d, x="load", y=col, hue="path", ax=ax, showfliers=True, fliersize=1, log_scale=True)
        ax.set(title=title, ylabel="latency (µs, log)", xlabel="offered load")
    return save(fig, out, "latency")


def render(run: RunView) -> list[str]:
    summ = run.table(T.LATENCY_SUMMARY)
    per = run.table(T.LATENCY)
    figs = plot_latency_boxplots(per, run.figures_dir)
    lines = header(run, "latency")
    lines += ["## Latency per path and offered load", "", table(summ, T.LATENCY_SUMMARY), "",
              "Every packet's latency is in `latency.csv.gz`. In-switch: egress minus ingress timestamp the switch "
              "writes into the verdict header (the software classifier host's path has none: s1 only redirects). "
              "Host to host: h2's capture time minus h1's, through veth pairs and the kernel. Replay at a fixed "
              "rate: inter-arrival features follow the replay clock, so verdicts (not latencies) differ from an "
              "original-timing run; conformance is still checked against the reference on the same frames.",
              "† the software classifier host: the float model behind s1, for what cannot run in a switch.", ""]
    lost = summ[summ["lost"].fillna(0) > 0]
    for _, r in lost.iterrows():
        lines.append(f"- {r['path']} at {r['load']} ({r['pps']} pps): {int(r['lost'])} packets lost, unexplained "
                     "by any tool's drop counter: that load is above what this path carries here.")
    lines += ["", "## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
