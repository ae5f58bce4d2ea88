"""The throughput kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.throughput import tables as T
from chimera.experiments.kinds.throughput.config import ThroughputSection
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView
from chimera.targets.registry import TARGETS, target_class


def plot_throughput(df: pd.DataFrame, out: Path) -> list[Path]:
    """Delivered packets/s and Gbps per frame size and path."""
    sns.set_theme(style="whitegrid")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    d = df.copy()
    d["delivered_kpps"] = d["delivered_pps"] / 1e3
    sns.barplot(data=d, x="frame", y="delivered_kpps", hue="path", ax=axes[0])
    axes[0].set(xlabel="frame size (bytes)", ylabel="delivered (kpps)", title="packets per second")
    sns.barplot(data=d, x="frame", y="delivered_gbps", hue="path", ax=axes[1], legend=False)
    axes[1].set(xlabel="frame size (bytes)", ylabel="delivered (Gbit/s)", title="bits per second")
    return save(fig, out, "throughput")


def _goal(target: str) -> str:
    """The goal the target's record states for its 0-loss rate (none for a target that is not benched)."""
    cls = TARGETS.get(target) and target_class(target)
    bench = cls.bench if cls else None
    return f"; goal for {target}: >= {bench.zero_loss_goal_pps:,} pps" if bench is not None else ""


def render(run: RunView) -> list[str]:
    df = run.table(T.THROUGHPUT)
    figs = plot_throughput(df, run.figures_dir)
    t = run.manifest.get("throughput", ThroughputSection) or ThroughputSection()
    goal = _goal(run.manifest.target)
    lines = header(run, "throughput")
    lines += ["## Delivered rate per path and frame size (top-speed replay)", "", table(df, T.THROUGHPUT), "",
              "delivered: frames captured at h2 over the capture's time span; offered: h1's send rate. Loss, "
              "split: not_sent (tcpreplay), dropped_by_capture (the kernel's count at h2's tcpdump: the receiver, "
              "not the switch), lost (unexplained by any tool). bare forwarding: s1 runs only a redirect program. "
              "† the software classifier host. Fixed-size frames are the test packets cut or padded, IP length "
              "rewritten: the classifier sees other lengths than it was trained on (verdicts are still checked "
              "against the reference on the same frames). On the software classifier host's path, frames the "
              "daemon cannot keep up with overflow its socket, which no tool counts: they show as lost.", ""]
    if run.has(T.LADDER):
        lines += ["## Highest fixed rate with 0 packets lost unexplained (Chimera path, the dataset's sizes)", "",
                  table(run.table(T.LADDER), T.LADDER), "",
                  f"Highest rate offered with 0 packets lost unexplained: **{t.max_zero_loss_pps} pps** "
                  f"(asked for {t.max_zero_loss_requested_pps}; tcpreplay offers less than asked when the "
                  f"sender is the bottleneck{goal}). If no step lost a packet, "
                  "the switch's limit is above what the sender offers here. At a fixed rate, inter-arrival features "
                  "follow the replay clock.", ""]
    det = t.target_detail
    if det.get("note"):  # what the target says a reader of its rates should know
        lines += [f"{det.get('target')}: {det}.", ""]
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
