"""Throughput through s1: the full Chimera pipeline vs a bare redirect program on the same path.

A third program, mark_only, inserts the verdict header and nothing else: it splits
the cost into "marking" and "classifying".

Both programs run in the same testbed, on the same replay (the quickstart test
split looped, tcpreplay --topspeed, pinned to one CPU); throughput is packets
delivered to h2 per second of sending. The ratio full/bare is the number that
transfers between machines.
"""

from __future__ import annotations

from typing import TypedDict

import logging
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from chimera.bench.results import BenchResult, Stat, bench_run, summary
from chimera.data.pcapwrite import normalized_frames, write_pcap
from chimera.errors import TargetError
from chimera.experiments.load import build_artifact
from chimera.targets.ebpf import EbpfTarget
from chimera.targets.ebpf.build import build_object, build_redirect_object
from chimera.targets.ebpf.loader import EbpfPipeline
from chimera.targets.ebpf.node import EbpfSwitch
from chimera.testbed.topology import Testbed

log = logging.getLogger(__name__)
LOOPS = 100
ROUNDS = 5


def _rx(node, intf: str) -> int:
    return int(node.cmd(f"cat /sys/class/net/{intf}/statistics/rx_packets").strip())


def _blast(tb, pcap: Path) -> tuple[int, int, float]:
    before = _rx(tb.h2, "h2-eth0")
    r = tb.h1.popen(["taskset", "-c", "0", "tcpreplay", "-i", "h1-eth0", "--topspeed", f"--loop={LOOPS}", str(pcap)],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = r.communicate()[0].decode(errors="replace")
    m = re.search(r"Actual: (\d+) packets .* sent in ([\d.]+) seconds", out)
    if not m:
        raise TargetError(f"could not read tcpreplay's summary (exit {r.returncode}): {out[-400:]}",
                          "check that tcpreplay runs in the h1 namespace (see the output above)")
    time.sleep(0.5)
    return int(m.group(1)), _rx(tb.h2, "h2-eth0") - before, float(m.group(2))


class SwitchResult(BenchResult):
    rates_pps: dict[str, list[float]]
    ratio: Stat                 # full pipeline / bare redirect, within each round
    header_ratio: Stat          # verdict header alone / bare redirect


class SwitchSummary(TypedDict):
    """What ``main`` returns: each program's median rate, and the full pipeline over bare redirect per round."""
    rates_pps: dict[str, float]
    ratio: float
    ratio_iqr: float
    samples_ratio: list[float]
    results: str


def main(rounds: int = ROUNDS) -> SwitchSummary:
    EbpfTarget.require_available()
    built = build_artifact("quickstart")
    art = built.art
    with tempfile.TemporaryDirectory() as d:
        dd = Path(d)
        table = built.data.replay_table
        pcap = dd / "replay.pcap"
        write_pcap(pcap, normalized_frames(table, np.arange(len(table))), table.ts_ns)
        obj = build_object(art, dd)
        progs = ("redirect", "mark_only", "chimera_ingress")
        bare = build_redirect_object(dd)
        rates: dict[str, list[float]] = {p: [] for p in progs}
        with Testbed(EbpfSwitch, dd, dd) as tb:
            for rnd in range(rounds):  # alternate programs, so drift on the machine hits all of them
                for prog in progs:
                    p = EbpfPipeline(bare if prog == "redirect" else obj)
                    try:
                        if prog != "redirect":
                            p.install(art)
                        p.attach(tb.s1.pid, tb.s1.port_pairs(), prog=prog)
                        sent, got, secs = _blast(tb, pcap)
                    finally:
                        p.close()
                    rates[prog].append(got / secs)
                    log.info("round %d %s: sent %d, delivered %d in %.2f s: %.0f pkt/s", rnd + 1, prog, sent, got,
                             secs, got / secs)
    results = {p: float(np.median(r)) for p, r in rates.items()}
    ratios = [f / b for f, b in zip(rates["chimera_ingress"], rates["redirect"])]  # within one round
    header = [m / b for m, b in zip(rates["mark_only"], rates["redirect"])]
    s, h = summary(ratios), summary(header)
    log.info("full pipeline / bare redirect = %.2f (IQR %.2f over %d rounds; goal >= 0.7); verdict header alone / "
             "bare = %.2f", s["median"], s["iqr"], rounds, h["median"])
    with bench_run("switch", {"rounds": rounds, "loops": LOOPS, "model": "quickstart"}) as run:
        run.manifest.put("result", SwitchResult(rates_pps=rates, ratio=Stat.model_validate(s),
                                                header_ratio=Stat.model_validate(h)))
        (run.path / "report.md").write_text(
            f"# eBPF switch throughput\n\nfull pipeline / bare redirect: median {s['median']:.2f} (IQR {s['iqr']:.2f}, "
            f"{rounds} alternating rounds); verdict header alone / bare: {h['median']:.2f}\n")
    return SwitchSummary(rates_pps=results, ratio=s["median"], ratio_iqr=s["iqr"], samples_ratio=ratios,
                         results=str(run.final))
