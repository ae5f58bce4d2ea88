"""A randomized stress capture for conformance: many flows, slot collisions, and malformed frames.

Built with scapy (packet crafting is what it is for). Besides ordinary TCP/UDP/ICMP
flows it mixes in everything a parser must survive: truncated IP and L4 headers,
non-IP frames, IPv6, IPv4 fragments (first and later), VLAN tags, IP options,
bad IHL/total length and jumbo frames. Deterministic for a seed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether

from chimera.data.pcapwrite import write_pcap


def stress_frames(seed: int = 1, flows: int = 400, packets: int = 3000) -> tuple[list[bytes], np.ndarray]:
    rng = np.random.default_rng(seed)
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    ends = [(f"10.{rng.integers(0, 4)}.{rng.integers(0, 256)}.{rng.integers(1, 255)}", int(rng.integers(1, 65535)),
             f"172.16.{rng.integers(0, 8)}.{rng.integers(1, 255)}", int(rng.choice([53, 80, 443, 8080, 1900])),
             int(rng.choice([6, 6, 17, 1]))) for _ in range(flows)]
    frames: list[bytes] = []
    for _ in range(packets):
        kind = rng.uniform()
        s, sp, d, dp, proto = ends[int(rng.integers(0, flows))]
        if rng.uniform() < 0.5:
            s, sp, d, dp = d, dp, s, sp
        size = int(rng.choice([0, 10, 100, 600, 1400]))
        if kind < 0.80:
            l4 = (TCP(sport=sp, dport=dp, flags=int(rng.integers(0, 256))) if proto == 6 else
                  UDP(sport=sp, dport=dp) if proto == 17 else ICMP())
            f = bytes(eth / IP(src=s, dst=d, ttl=int(rng.integers(1, 255))) / l4 / bytes(size))
        elif kind < 0.83:
            f = bytes(eth / ARP(psrc=s, pdst=d))
        elif kind < 0.86:
            f = bytes(eth / IPv6(src="fe80::1", dst="fe80::2") / UDP(sport=sp, dport=dp) / bytes(size))
        elif kind < 0.88:
            f = bytes(eth / IP(src=s, dst=d, flags="MF") / UDP(sport=sp, dport=dp) / bytes(64))
        elif kind < 0.90:
            f = bytes(eth / IP(src=s, dst=d, frag=int(rng.integers(1, 100)), proto=17) / bytes(64))
        elif kind < 0.92:
            f = bytes(eth / Dot1Q(vlan=5) / IP(src=s, dst=d) / UDP(sport=sp, dport=dp))
        elif kind < 0.94:  # IP options (IHL 6)
            f = bytes(eth / IP(src=s, dst=d, options=b"\x01\x01\x01\x00") / TCP(sport=sp, dport=dp, flags="S"))
        elif kind < 0.96:  # truncated inside the IP or the L4 header
            full = bytes(eth / IP(src=s, dst=d) / TCP(sport=sp, dport=dp))
            f = full[: int(rng.choice([20, 30, 40, 45]))]
        elif kind < 0.98:  # bad IHL / total length
            raw = bytearray(bytes(eth / IP(src=s, dst=d) / UDP(sport=sp, dport=dp)))
            if rng.uniform() < 0.5:
                raw[14] = 0x43
            else:
                raw[16:18] = b"\x00\x08"
            f = bytes(raw)
        else:
            f = bytes(eth / IP(src=s, dst=d) / UDP(sport=sp, dport=dp) / bytes(8000))
        frames.append(f)
    ts = 1_700_000_000 * 10**9 + np.cumsum(rng.integers(1_000, 3_000_000, size=len(frames)))
    return frames, ts.astype(np.int64)


def write_stress_pcap(path: Path, seed: int = 1, flows: int = 400, packets: int = 3000) -> Path:
    frames, ts = stress_frames(seed, flows, packets)
    write_pcap(path, frames, ts)
    return path
