"""The report of a throughput run: delivered rates per path and frame size, loss, the zero-loss ladder."""

from __future__ import annotations

from chimera.formats import tables as T
from chimera.report import figures
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.run import RunView


def render(run: RunView) -> list[str]:
    df = run.table(T.THROUGHPUT)
    figs = figures.throughput(df, run.figures_dir)
    t = run.manifest.section("throughput", {})
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
                  f"Highest rate offered with 0 packets lost unexplained: **{t.get('max_zero_loss_pps')} pps** "
                  f"(asked for {t.get('max_zero_loss_requested_pps')}; tcpreplay offers less than asked when the "
                  "sender is the bottleneck; goal: >= 50 kpps on eBPF, >= 5 kpps on BMv2). If no step lost a packet, "
                  "the switch's limit is above what the sender offers here. At a fixed rate, inter-arrival features "
                  "follow the replay clock.", ""]
    det = t.get("target_detail") or {}
    if det.get("target") == "bmv2":
        lines += [f"BMv2: {det}. Logging builds are 10x slower or more; the manifest records the binary's "
                  "version.", ""]
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
