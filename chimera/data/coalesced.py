"""A capture of coalesced frames, as a capturing host's GRO/LRO (receive) or TSO/GSO (send) leaves them.

Real captures taken on an end host hold IPv4 packets far larger than any MTU: the NIC or the kernel merged
several wire segments into one before the capture saw them, up to the IP total length's limit of 65,535 bytes
(a 65,549-byte Ethernet frame). This capture puts such frames in TCP bulk transfers and UDP (QUIC-like) flows
beside ordinary traffic, with the edge cases a replay must handle:

- every size from one segment to the largest frame IPv4 allows (IP total length 65,535);
- frames one byte either side of the replay snap (chimera.formats.snap.REPLAY_SNAP);
- frames the capture itself cut short (its snap length below the IP total length).

Synthetic, built with scapy, deterministic for a seed (``pcaps/coalesced.pcap``, chimera.data.bundled).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from chimera.data.pcapwrite import write_pcap
from chimera.formats.snap import REPLAY_SNAP

#: the largest IPv4 packet, and its Ethernet frame
MAX_IP_LEN = 65_535
MSS = 1448
#: Ethernet, IPv4 and TCP headers with the timestamp option, as Linux sends them
TCP_HDRS = 14 + 20 + 32


def _tcp(eth: Ether, s: str, d: str, sp: int, dp: int, flags: str, payload: int) -> bytes:
    opts = [("NOP", None), ("NOP", None), ("Timestamp", (1, 2))]
    return bytes(eth / IP(src=s, dst=d) / TCP(sport=sp, dport=dp, flags=flags, options=opts) / bytes(payload))


def coalesced_frames(seed: int = 7, flows: int = 8) -> tuple[list[bytes], np.ndarray]:
    """Frames and their capture times (ns)."""
    rng = np.random.default_rng(seed)
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frames: list[bytes] = []
    largest = MAX_IP_LEN - 20 - 32  # the TCP payload of a 65,535-byte IP packet
    for k in range(flows):
        c, s = f"10.1.{k // 200}.{k % 200 + 1}", f"192.0.2.{k % 8 + 1}"
        cp, sp = int(rng.integers(32768, 61000)), int(rng.choice([80, 443, 445, 5432, 8080]))
        if k % 6 == 5:  # a UDP flow whose sender used GSO: one datagram of many QUIC packets
            for _ in range(int(rng.integers(4, 8))):
                size = int(rng.choice([1200, 1200, 9000, 30000, MAX_IP_LEN - 28]))
                src, dst, a, b = (c, s, cp, 443) if rng.uniform() < 0.3 else (s, c, 443, cp)
                frames.append(bytes(eth / IP(src=src, dst=dst) / UDP(sport=b, dport=a) / bytes(size)))
            continue
        frames += [_tcp(eth, c, s, cp, sp, "S", 0), _tcp(eth, s, c, sp, cp, "SA", 0), _tcp(eth, c, s, cp, sp, "A", 0)]
        for _ in range(int(rng.integers(4, 9))):
            segs = int(rng.choice([1, 1, 2, 6, 12, 30, 45]))
            payload = min(segs * MSS, largest)
            if rng.uniform() < 0.15:
                payload = largest  # the largest frame IPv4 allows
            frames.append(_tcp(eth, s, c, sp, cp, "PA", payload))
            frames.append(_tcp(eth, c, s, cp, sp, "A", 0))
        frames.append(_tcp(eth, c, s, cp, sp, "FA", 0))
    # one byte either side of the replay snap, and exactly on it
    for extra in (-1, 0, 1):
        frames.append(_tcp(eth, "10.9.0.1", "192.0.2.9", 40000, 80, "PA", REPLAY_SNAP - TCP_HDRS + extra))
    # frames the capture cut short: the IP total length says more than the frame holds
    for n in (30000, largest):
        frames.append(_tcp(eth, "192.0.2.9", "10.9.0.3", 80, 40002, "PA", n)[:128])
    ts = 1_700_000_000 * 10**9 + np.cumsum(rng.integers(5_000, 4_000_000, size=len(frames)))
    return frames, ts.astype(np.int64)


def write_coalesced_pcap(path: Path, seed: int = 7, flows: int = 8) -> Path:
    frames, ts = coalesced_frames(seed, flows)
    write_pcap(path, frames, ts)
    return path
