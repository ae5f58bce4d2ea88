"""The highest fixed replay rate at which the Chimera path loses 0 packets unexplained, per switch target.

Runs the throughput experiment's ladder (the dataset's own frame sizes, no software host) ``REPEATS`` times on
every switch target that can run here, eBPF and BMv2, and reads each ladder's highest rate *offered* (h1's send
rate) with 0 packets lost. The rate is published as the median of the ladders with their range
(chimera.bench.ladder): one ladder on a busy host is one draw. A peer testbed paces BMv2 at 100 pps because of
loss; goals (issue 12): >= 50 kpps on eBPF, >= 5 kpps on BMv2, met where the median reaches them. A ladder with
no lost step reads a lower bound (the sender's limit); one whose lowest step lost reads "below the lowest step".
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import pandas as pd
from tqdm import tqdm

from chimera.bench.install import profile, runnable_switches
from chimera.bench.ladder import LadderRead, read_ladder, spread
from chimera.bench.results import BenchResult, bench_run
from chimera.experiments.load import load_experiment
from chimera.experiments.runner import run_experiment

log = logging.getLogger(__name__)
#: ladders per target: an odd count, so the median is one ladder's reading
REPEATS = 5


@dataclass(frozen=True)
class ZeroLossRow:
    """zeroloss.csv: one target's readings over its ladders."""

    target: str
    ladders: int
    median_pps: int | None           # None: the median ladder lost at its lowest step
    low_pps: int | None              # None: some ladder lost at its lowest step
    high_pps: int | None
    below_lowest_step: int           # ladders whose lowest step lost frames
    never_lost: int                  # ladders with no lost step (their reading is a lower bound)
    lowest_step_pps: int
    goal_pps: int
    goal_met: bool                   # the median reaches the goal
    words: str


class ZeroLossResult(BenchResult):
    rows: list[ZeroLossRow]


def row(target: str, reads: list[LadderRead], goal_pps: int) -> ZeroLossRow:
    """A target's summary row from its ladders' readings."""
    s = spread(reads)
    return ZeroLossRow(target, s.n, s.median, s.low, s.high, s.below, s.never_lost, s.lowest_step, goal_pps,
                       (s.median or 0) >= goal_pps, s.words())


def main(targets: tuple[str, ...] | None = None, repeats: int = REPEATS) -> dict[str, object]:
    """The highest 0-loss rate of each testbed the benches hold to goals (the target record's ``bench``)."""
    runnable, skipped = runnable_switches(targets, "zeroloss")
    ladder = {t: list(profile(t).zero_loss_ladder) for t in runnable}
    packets = {t: profile(t).zero_loss_packets for t in runnable}
    rows: list[ZeroLossRow] = []
    steps: list[pd.DataFrame] = []
    with bench_run("zeroloss", {"targets": runnable, "ladder": ladder, "packets": packets, "repeats": repeats,
                                "skipped": skipped}) as run:
        for t in runnable:
            cfg = load_experiment("throughput", {"throughput": {"sizes": ["mix"], "max_packets": packets[t],
                                                                "ladder_pps": ladder[t], "software": False}})
            reads = []
            for i in tqdm(range(repeats), desc=f"{t} ladders", unit="ladder"):
                out = run_experiment(cfg, target=t, results_root=run.path / "runs")
                st = pd.read_csv(out / "ladder.csv")
                reads.append(read_ladder(st, rate="offered_pps"))
                # relative to the bench's run: its path is the .partial one until the run completes
                steps.append(st.assign(target=t, repeat=i + 1, run=out.relative_to(run.path).as_posix()))
                log.info("[%s] ladder %d of %d: %s", t, i + 1, repeats, reads[-1])
            rows.append(row(t, reads, profile(t).zero_loss_goal_pps))
            log.info("[%s] highest rate with 0 lost: %s (goal >= %d)", t, rows[-1].words, rows[-1].goal_pps)
        df = pd.DataFrame([asdict(r) for r in rows])
        df.to_csv(run.path / "zeroloss.csv", index=False)
        pd.concat(steps, ignore_index=True).to_csv(run.path / "ladders.csv", index=False)
        run.manifest.put("result", ZeroLossResult(rows=rows))
        (run.path / "report.md").write_text("# Highest zero-loss replay rate\n\n" + df.to_markdown(index=False) +
                                           f"\n\nEach target's ladder ran {repeats} times; every step of every ladder "
                                           "is in ladders.csv.\n")
    log.info("zero-loss bench: %s", run.final)
    return {"rows": [asdict(r) for r in rows], "results": str(run.final)}
