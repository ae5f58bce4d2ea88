"""The highest fixed replay rate at which the Chimera path loses 0 packets unexplained, per switch target.

Runs the throughput experiment's ladder (the dataset's own frame sizes, no software host) on every switch
target that can run here, eBPF and BMv2, and reads the highest rate *offered* (h1's send rate) with 0
packets lost. A peer testbed paces BMv2 at 100 pps because of loss; goals (issue 12): >= 50 kpps on eBPF,
>= 5 kpps on BMv2. When no step loses a packet, the limit is above what the sender could offer: the
number is a lower bound, and the report says so.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from chimera.bench.results import BenchResult, bench_run
from chimera.formats.rundir import Manifest
from chimera.experiments.load import load_experiment
from chimera.experiments.kinds.throughput import KIND as THROUGHPUT_KIND
from chimera.experiments.kinds.throughput.config import ThroughputSection
from chimera.experiments.runner import run_experiment
from chimera.bench.install import profile, runnable_switches

log = logging.getLogger(__name__)


class ZeroLossResult(BenchResult):
    rows: list[dict[str, Any]]           # zeroloss.csv's rows: per target, the highest 0-loss rate and its goal


def main(targets: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The highest 0-loss rate of each testbed the benches hold to goals (the target record's ``bench``)."""
    runnable, skipped = runnable_switches(targets, "zeroloss")
    rows = []
    ladder = {t: list(profile(t).zero_loss_ladder) for t in runnable}
    packets = {t: profile(t).zero_loss_packets for t in runnable}
    with bench_run("zeroloss", {"targets": runnable, "ladder": ladder, "packets": packets,
                                "skipped": skipped}) as run:
        for t in runnable:
            cfg = load_experiment("throughput", {"throughput": {"sizes": ["mix"], "max_packets": packets[t],
                                                                "ladder_pps": ladder[t], "software": False}})
            out = run_experiment(cfg, target=t, results_root=run.path / "runs")
            m = THROUGHPUT_KIND.section(Manifest.read(out / "manifest.json")) or ThroughputSection()
            steps = pd.read_csv(out / "ladder.csv")
            bound = bool((steps["lost"] == 0).all())
            rows.append({"target": t, "max_zero_loss_pps": m.max_zero_loss_pps,
                         "requested_pps": m.max_zero_loss_requested_pps, "goal_pps": profile(t).zero_loss_goal_pps,
                         "lower_bound": bound, "goal_met": (m.max_zero_loss_pps or 0) >= profile(t).zero_loss_goal_pps,
                         # relative to the bench's run: its path is the .partial one until the run completes
                         "run": out.relative_to(run.path).as_posix()})
            log.info("[%s] highest rate with 0 lost: %s pps offered%s (goal >= %d)", t, m.max_zero_loss_pps,
                     " (no step lost: a lower bound, the sender's limit)" if bound else "", profile(t).zero_loss_goal_pps)
        df = pd.DataFrame(rows)
        df.to_csv(run.path / "zeroloss.csv", index=False)
        run.manifest.put("result", ZeroLossResult(rows=rows))
        (run.path / "report.md").write_text("# Highest zero-loss replay rate\n\n" + df.to_markdown(index=False) + "\n")
    log.info("zero-loss bench: %s", run.final)
    return {"rows": rows, "results": str(run.final)}
