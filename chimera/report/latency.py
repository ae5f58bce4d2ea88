"""The report of a latency run: percentiles, loss and conformance per path and load, and the boxplots."""

from __future__ import annotations

from chimera.formats import tables as T
from chimera.report import figures
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.run import RunView


def render(run: RunView) -> list[str]:
    summ = run.table(T.LATENCY_SUMMARY)
    per = run.table(T.LATENCY)
    figs = figures.latency_boxplots(per, run.figures_dir)
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
