"""BMv2 running chimera.p4 against BMv2 running a plain forwarding program, on the same build.

Both run on the same testbed shape with the same frames (the throughput experiment's test packets, their
own sizes) and the same ladder of fixed replay rates; each path's number is the highest rate asked with 0
packets lost unexplained. The two ladders run back to back ``REPEATS`` times, and the ratio chimera /
forwarding is taken per repeat (a busy spell slows both) and published as its median with its range
(chimera.bench.ladder): the ratio is what transfers between machines (goal, issue 12: >= 0.5). When forwarding
loses nothing up to the top of the ladder the ratio is an upper bound, and the report says so. The build's
logging configuration (bm/config.h) goes into the manifest: logging builds are ten times slower or more.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from chimera import paths
from chimera.bench.ladder import LadderRead, ratio_spread, read_ladder, spread
from chimera.bench.results import BenchResult, bench_run
from chimera.data.pcap import read_pcap
from chimera.experiments.load import load_experiment
from chimera.experiments.runner import run_experiment
from chimera.formats.rows import Cells
from chimera.targets.bmv2.compiler import compile_fixed
from chimera.targets.bmv2 import Bmv2Target
from chimera.targets.bmv2.node import Bmv2Switch
from chimera.testbed.replay import Pace, replay
from chimera.testbed.topology import Testbed

log = logging.getLogger(__name__)
ROOT = paths.ROOT
FORWARD = ROOT / "p4" / "forward.p4"
LADDER = [250, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 20000]
PACKETS = 3000
GOAL = 0.5
#: ladder pairs: an odd count, so the median is one repeat's ratio
REPEATS = 5


class Bmv2RatioResult(BenchResult):
    chimera_zero_loss_pps: int | None      # the median ladder's reading (None: below the lowest step)
    forward_zero_loss_pps: int | None
    ratio: float | None                    # the median of the per-repeat ratios (None: no repeat had both)
    goal: float
    ratio_is_upper_bound: bool = False
    bmv2_build: Any = None
    repeats: int = 1                       # runs before repeated ladders read one ladder each
    ratio_low: float | None = None
    ratio_high: float | None = None
    words: str = ""                        # the three spreads in words


class Bmv2ForwardSwitch(Bmv2Switch):
    """simple_switch_grpc started with p4/forward.p4's JSON: nothing to install."""

    def argv(self) -> list[str]:
        a = super().argv()
        a[a.index("--no-p4")] = str(compile_fixed(FORWARD, self.build_dir))
        return a


def build_config() -> dict[str, Any]:  # JSON out: the BMv2 JSON config the bench builds
    """BMv2's compiled-in logging switches, from the installed bm/config.h (where the headers are)."""
    for inc in (Path(shutil.which("simple_switch_grpc") or "/").parents[1] / "include", Path("/usr/include"),
                Path("/usr/local/include")):
        h = inc / "bm" / "config.h"
        if h.is_file():
            text = h.read_text()
            return {"config_h": str(h), **{m: bool(re.search(rf"^#define {m}\b", text, re.M))
                                             for m in ("LOG_DEBUG_ON", "LOG_TRACE_ON", "ELOG_ON")}}
    return {"config_h": None, "note": "bm/config.h not found: logging configuration unknown"}


def _forward_ladder(frames_pcap: Path, work: Path) -> list[Cells]:
    rows: list[Cells] = []
    (work / "replay").mkdir(parents=True, exist_ok=True)
    with Testbed(Bmv2ForwardSwitch, work / "build", work) as tb:
        s1 = tb.s1
        for pps in LADDER:
            files = replay(tb.h1, tb.h2, frames_pcap, Pace("pps", pps=pps), work / "replay", f"fwd-{pps}",
                           PACKETS, switch_alive=s1.alive, rx_filter="")
            sent, got = read_pcap(files.sent), read_pcap(files.received)
            lost = max(0, len(sent) - len(got) - files.dropped_at_receiver)
            rows.append({"pps": pps, "sent": len(sent), "received": len(got), "lost": lost})
            log.info("[bmv2 forwarding] %d pps: sent %d, received %d, lost %d", pps, len(sent), len(got), lost)
            if lost:
                break
    return rows


def ladders(by_program: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every program's ladder in one table, a ``path`` column naming the program, columns aligned by name (the
    two ladders' columns differ: appending the second without its header shifted its values under the first's)."""
    return pd.concat([df.assign(path=name) for name, df in by_program.items()], ignore_index=True)


def main(repeats: int = REPEATS) -> Bmv2RatioResult:
    Bmv2Target.require_available()
    with bench_run("bmv2ratio", {"ladder": LADDER, "packets": PACKETS, "repeats": repeats,
                                 "bmv2_build": build_config()}) as run:
        cfg = load_experiment("throughput", {"throughput": {"sizes": ["mix"], "max_packets": PACKETS,
                                                            "ladder_pps": LADDER, "software": False}})
        pairs: list[tuple[LadderRead, LadderRead]] = []
        tables = []
        for i in tqdm(range(repeats), desc="ladder pairs", unit="pair"):
            out = run_experiment(cfg, target=Bmv2Target.name, results_root=run.path / "runs")
            chimera = pd.read_csv(out / "ladder.csv")
            fwd = pd.DataFrame(_forward_ladder(out / "frames" / "frames-mix.pcap", run.path / "forward" / str(i + 1)))
            pairs.append((read_ladder(chimera), read_ladder(fwd)))
            tables.append(ladders({"chimera.p4": chimera, "forward.p4": fwd}).assign(repeat=i + 1))
        c, f = spread([a for a, _ in pairs]), spread([b for _, b in pairs])
        rs = ratio_spread(pairs)
        words = f"chimera.p4 {c.words()}; forward.p4 {f.words()}; ratio {rs.words()}"
        r = Bmv2RatioResult(chimera_zero_loss_pps=c.median, forward_zero_loss_pps=f.median, ratio=rs.median,
                            goal=GOAL, ratio_is_upper_bound=rs.is_upper_bound,
                            bmv2_build=build_config(), repeats=repeats, ratio_low=rs.low, ratio_high=rs.high,
                            words=words)
        run.manifest.put("result", r)
        pd.concat(tables, ignore_index=True).to_csv(run.path / "ladder.csv", index=False)
        (run.path / "report.md").write_text(
            "# BMv2: chimera.p4 vs plain forwarding (same build)\n\n"
            f"Highest fixed rate with 0 lost over {repeats} ladder pairs run back to back: {words} "
            f"(goal >= {GOAL}). Every step of every ladder is in ladder.csv.\n\n"
            f"Build: {json.dumps(build_config())}\n")
    log.info("bmv2 ratio: %s (goal >= %.1f); %s", words, GOAL, run.final)
    return r
