"""Ingest benchmark: our columnar reader vs dpkt on the same file, same fields."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import dpkt

from chimera.bench.results import BenchResult, bench_run, summary
from chimera.data.pcap import read_pcap

log = logging.getLogger(__name__)


def dpkt_read(path: Path) -> int:
    """Parse the same fields with dpkt (Ethernet/IP/TCP|UDP); returns packets read."""
    n = 0
    with open(path, "rb") as fh:
        for ts, buf in dpkt.pcap.UniversalReader(fh):
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP):
                l4 = ip.data
                _ = (ip.len, ip.ttl, ip.p, ip.src, ip.dst)
                if isinstance(l4, (dpkt.tcp.TCP, dpkt.udp.UDP)):
                    _ = (l4.sport, l4.dport, getattr(l4, "flags", 0))
            n += 1
    return n


def run(path: Path, repeats: int = 5) -> tuple[IngestResult, str]:
    """Per repeat, both readers on ``path``; the ratio ours/dpkt is measured within each repeat. Writes
    results/bench-ingest/<run>/; returns the result and that run's folder."""
    read_pcap(path)  # warm the numba cache
    ours, theirs, n = [], [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = len(read_pcap(path))
        ours.append(n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        nd = dpkt_read(path)
        theirs.append(nd / (time.perf_counter() - t0))
    ratios = [a / b for a, b in zip(ours, theirs)]
    r = IngestResult(packets=n, ours_pps=summary(ours)["median"], dpkt_pps=summary(theirs)["median"],
                     ratio=summary(ratios)["median"], ratio_iqr=summary(ratios)["iqr"], samples_ratio=ratios,
                     samples_ours_pps=ours, samples_dpkt_pps=theirs)
    with bench_run("ingest", {"pcap": str(path), "repeats": repeats}) as run:
        run.manifest.put("result", r)
        (run.path / "report.md").write_text(f"# Ingest\n\n{path}: {n} packets, {repeats} repeats: ours "
                                            f"{r.ours_pps / 1e6:.2f} M pkt/s, dpkt {r.dpkt_pps / 1e6:.3f} M pkt/s, "
                                            f"ratio {r.ratio:.1f}x (IQR {r.ratio_iqr:.1f})\n")
    return r, str(run.final)


def default_pcap(data_root: Path = Path("data")) -> Path:
    """The bench's standard capture: a 3000-flow synthetic ISCXVPN-like trace, generated once."""
    from chimera.data.synthetic import SyntheticSpec, generate
    path = data_root / "bench-ingest"
    if not (path / "packets.pcap").exists():
        generate(SyntheticSpec(profile="iscxvpn", flows=3000, seed=7), path, overwrite=True)
    return path / "packets.pcap"


class IngestResult(BenchResult):
    packets: int
    ours_pps: float
    dpkt_pps: float
    ratio: float
    ratio_iqr: float
    samples_ratio: list[float]
    samples_ours_pps: list[float]
    samples_dpkt_pps: list[float]


def main(repeats: int = 5, pcap: Path | None = None) -> IngestResult:
    """Our reader against dpkt on ``pcap`` (default: a generated capture of 3,000 flows)."""
    pcap = pcap or default_pcap()
    r, where = run(pcap, repeats)
    log.info("ingest %s: %d packets; ours %.2f M pkt/s, dpkt %.3f M pkt/s, ratio %.1fx (IQR %.1f); %s", pcap,
             r.packets, r.ours_pps / 1e6, r.dpkt_pps / 1e6, r.ratio, r.ratio_iqr, where)
    return r
