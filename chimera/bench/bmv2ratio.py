"""BMv2 running chimera.p4 against BMv2 running a plain forwarding program, on the same build.

Both run on the same testbed shape with the same frames (the throughput experiment's test packets, their
own sizes) and the same ladder of fixed replay rates; each path's number is the highest rate *offered*
with 0 packets lost unexplained. The ratio chimera / forwarding is what transfers between machines
(goal, issue 12: >= 0.5). When forwarding loses nothing up to the top of the ladder the ratio is an upper
bound, and the report says so. The build's logging configuration (bm/config.h) goes into the manifest:
logging builds are ten times slower or more.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from chimera import paths
from chimera.bench.results import BenchResult, bench_run
from chimera.data.pcap import read_pcap
from chimera.experiments.load import load_experiment
from chimera.experiments.runner import run_experiment
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


class Bmv2RatioResult(BenchResult):
    chimera_zero_loss_pps: int
    forward_zero_loss_pps: int
    ratio: float
    goal: float
    ratio_is_upper_bound: bool = False
    bmv2_build: Any = None


class Bmv2ForwardSwitch(Bmv2Switch):
    """simple_switch_grpc started with p4/forward.p4's JSON: nothing to install."""

    def argv(self) -> list[str]:
        a = super().argv()
        a[a.index("--no-p4")] = str(compile_fixed(FORWARD, self.build_dir))
        return a


def build_config() -> dict[str, Any]:
    """BMv2's compiled-in logging switches, from the installed bm/config.h (where the headers are)."""
    for inc in (Path(shutil.which("simple_switch_grpc") or "/").parents[1] / "include", Path("/usr/include"),
                Path("/usr/local/include")):
        h = inc / "bm" / "config.h"
        if h.is_file():
            text = h.read_text()
            return {"config_h": str(h), **{m: bool(re.search(rf"^#define {m}\b", text, re.M))
                                             for m in ("LOG_DEBUG_ON", "LOG_TRACE_ON", "ELOG_ON")}}
    return {"config_h": None, "note": "bm/config.h not found: logging configuration unknown"}


def _forward_ladder(frames_pcap: Path, work: Path) -> list[dict[str, Any]]:
    rows = []
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


def main() -> dict[str, Any]:
    Bmv2Target.require_available()
    with bench_run("bmv2ratio", {"ladder": LADDER, "packets": PACKETS, "bmv2_build": build_config()}) as run:
        cfg = load_experiment("throughput", {"throughput": {"sizes": ["mix"], "max_packets": PACKETS,
                                                            "ladder_pps": LADDER, "software": False}})
        out = run_experiment(cfg, target=Bmv2Target.name, results_root=run.path / "runs")
        chimera = pd.read_csv(out / "ladder.csv")
        fwd = pd.DataFrame(_forward_ladder(out / "frames" / "frames-mix.pcap", run.path / "forward"))
        best = (lambda df: int(df.loc[df["lost"] == 0, "pps"].max()) if (df["lost"] == 0).any() else 0)
        c, f = best(chimera), best(fwd)
        upper = bool((fwd["lost"] == 0).all())
        ratio = c / f if f else float("nan")
        r = {"chimera_zero_loss_pps": c, "forward_zero_loss_pps": f, "ratio": ratio, "goal": GOAL,
             "ratio_is_upper_bound": upper, "bmv2_build": build_config()}
        run.manifest.put("result", Bmv2RatioResult(**r))
        ladders({"chimera.p4": chimera, "forward.p4": fwd}).to_csv(run.path / "ladder.csv", index=False)
        (run.path / "report.md").write_text(
            "# BMv2: chimera.p4 vs plain forwarding (same build)\n\n"
            f"Highest fixed rate with 0 lost: chimera.p4 {c} pps, forward.p4 {f} pps{' (never lost: higher)' if upper else ''}"
            f"; ratio **{ratio:.3f}**{' (an upper bound)' if upper else ''} (goal >= {GOAL}).\n\n"
            f"Build: {json.dumps(build_config())}\n")
    log.info("bmv2 ratio: chimera.p4 %d pps / forward.p4 %d pps = %.3f%s (goal >= %.1f); %s", c, f, ratio,
             " (upper bound)" if upper else "", GOAL, run.final)
    return r
