"""Join captured verdicts with the replayed frames.

Every received frame is stripped of its verdict header; the recovered frame
must equal a replayed frame byte for byte. Under the trace clock the verdict's
``seq`` (the shim's index) says which replayed frame it is, and the bytes are
checked against that frame; without a shim, frames are matched in order (the
single path h1 - s1 - h2 keeps order; identical frames match in turn). Either
way each verdict belongs to exactly one replayed packet. Replayed packets
without a verdict are *lost* and counted; received frames that match nothing
(traffic the hosts themselves sent, a frame whose bytes differ from the one its
seq names) are *foreign* and counted.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chimera.data.pcap import read_raw
from chimera.formats import shim
from chimera.formats.verdict import FIELD_NAMES, NO_LABEL, NO_RULE, NO_SEQ, strip
from chimera.reference.pipeline import Verdicts
from chimera.testbed.outcome import Accounting, LatencySummary, PerPacketLatency, Rates

_SEQ = FIELD_NAMES.index("seq")


@dataclass
class Collected:
    verdicts: Verdicts          # one per replayed packet (lost ones: label NO_LABEL, flags 0)
    received: np.ndarray        # bool per replayed packet
    ts_in: np.ndarray           # int64 switch ingress ns (its own clock), 0 if lost
    ts_out: np.ndarray
    t_send: np.ndarray          # int64 capture ns at h1, 0 if not seen
    t_recv: np.ndarray          # int64 capture ns at h2
    foreign: int
    unmarked: int

    @property
    def lost(self) -> int:
        return int((~self.received).sum())


def _frames(path: Path) -> tuple[list[bytes], np.ndarray]:
    if not path.exists() or path.stat().st_size == 0:
        return [], np.zeros(0, np.int64)
    raw = read_raw(path)
    buf = raw.data
    return [bytes(buf[o:o + c]) for o, c in zip(raw.offset, raw.caplen)], raw.ts_ns


class _ByBytes:
    """In-order matching of frames to replayed frames by their bytes (identical frames match in turn). The index
    is built on the first lookup: a shimmed frame names its replayed frame and never needs it, and building it for
    a day's replay (600,000 frames) took 4.6 s, twice per replay."""

    def __init__(self, replayed: list[bytes]) -> None:
        self.replayed = replayed
        self.index: dict[bytes, collections.deque[int]] | None = None

    def take(self, frame: bytes) -> int | None:
        if self.index is None:
            self.index = collections.defaultdict(collections.deque)
            for i, f in enumerate(self.replayed):
                self.index[f].append(i)
        q = self.index.get(frame)
        return q.popleft() if q else None


def collect(replayed: list[bytes], sent_pcap: Path, recv_pcap: Path, marked: bool = True) -> Collected:
    """The verdict of every replayed frame (``replayed``: the frames as captured, without any shim).
    ``marked=False``: a program that marks nothing (a bare redirect) carried them; a received frame is then
    matched by its bytes alone, and has no verdict and no switch timestamps."""
    n = len(replayed)
    f_label = np.full(n, NO_LABEL, np.uint8)
    f_flags = np.zeros(n, np.uint8)
    f_score = np.zeros(n, np.uint32)
    f_rule = np.full(n, NO_RULE, np.uint8)
    f_cent = np.zeros(n, np.uint8)
    f_ver = np.zeros(n, np.uint16)
    ts_in, ts_out, t_recv, t_send = (np.zeros(n, np.int64) for _ in range(4))
    got = np.zeros(n, bool)
    foreign = unmarked = 0
    by_bytes = _ByBytes(replayed)
    frames, times = _frames(recv_pcap)
    for fr, t in zip(frames, times):
        if not marked:
            j = by_bytes.take(fr)
            if j is None:
                foreign += 1
            else:
                got[j], t_recv[j] = True, t
            continue
        try:
            fields, orig = strip(fr)
        except ValueError:
            unmarked += 1
            continue
        seq = fields[_SEQ]
        if seq != NO_SEQ:  # the shim's index: which frame this is; its bytes must be that frame's
            i: int | None = seq if seq < n and not got[seq] and replayed[seq] == orig else None
        else:
            i = by_bytes.take(orig)
        if i is None:
            foreign += 1
            continue
        got[i] = True
        f = dict(zip(FIELD_NAMES, fields))
        f_flags[i], f_label[i], f_rule[i], f_score[i] = f["flags"], f["label"], f["rule_id"], f["score"]
        f_ver[i], f_cent[i], ts_in[i], ts_out[i] = f["map_version"], f["centroid"], f["ts_in"], f["ts_out"]
        t_recv[i] = t
    # send timestamps: what h1 put on the wire (shimmed frames carry their index)
    sent_by_bytes = _ByBytes(replayed)
    sframes, stimes = _frames(sent_pcap)
    for fr, t in zip(sframes, stimes):
        try:
            sh, orig = shim.strip(fr)
            k: int | None = int(sh["index"]) if sh["index"] < n and replayed[sh["index"]] == orig else None
        except ValueError:
            k = sent_by_bytes.take(fr)
        if k is not None:
            t_send[k] = t
    v = Verdicts(label=f_label, flags=f_flags, score=f_score, rule_id=f_rule, centroid=f_cent, map_version=f_ver,
                 fused=np.zeros((n, 0), np.int64))
    return Collected(v, got, ts_in, ts_out, t_send, t_recv, foreign, unmarked)


def latency_summary(c: Collected) -> LatencySummary:
    """In-switch (header timestamps) and host-to-host (h1 send -> h2 receive) percentiles, µs."""
    sw = (c.ts_out - c.ts_in)[c.received] / 1e3
    hh = (c.t_recv - c.t_send)[c.received & (c.t_send > 0)] / 1e3

    def pct(a: np.ndarray, q: int) -> float | None:
        return float(np.percentile(a, q)) if a.size else None

    return LatencySummary(pct(sw, 50), pct(sw, 99), pct(hh, 50), pct(hh, 99))


def per_packet_latency(c: Collected) -> PerPacketLatency:
    """Per replayed packet, µs (NaN where unknown): in-switch from the verdict header's timestamps, host-to-host
    from the h1 and h2 captures. The latency experiment keeps every value, not only percentiles."""
    sw = np.where(c.received & (c.ts_in > 0), (c.ts_out - c.ts_in) / 1e3, np.nan)
    hh = np.where(c.received & (c.t_send > 0), (c.t_recv - c.t_send) / 1e3, np.nan)
    return PerPacketLatency(sw.astype(float), hh.astype(float))


def rates(c: Collected) -> Rates:
    """The offered rate (h1's send timestamps), the rate the switch saw (its ingress timestamps) and the rate
    delivered to h2 (its capture timestamps), pps."""
    sent, recv = c.t_send[c.t_send > 0], c.t_recv[c.received & (c.t_recv > 0)]
    return Rates(span_rate(sent), span_rate(c.ts_in[c.received]), span_rate(recv),
                 (int(sent.min()), int(sent.max())) if sent.size else None,
                 (int(recv.min()), int(recv.max())) if recv.size else None, int(sent.size), int(recv.size))


#: a frame shorter than an Ethernet header (a runt a capturing host recorded) cannot leave a packet socket
ETH_HEADER = 14


def account(replayed: list[bytes], got: Collected, failed_to_send: int, dropped_at_receiver: int,
            sender_mtu: int, overhead: int = 0, limit: int = 0, cut: int = 0) -> tuple[Accounting, np.ndarray]:
    """The accounting of a replay, and which frames could not be sent: frames larger than the sender's MTU, and
    runts shorter than an Ethernet header (neither leaves a packet socket; tcpreplay counts both as failed, and
    the reason names each). ``overhead``: bytes the harness added to every frame it sent (the trace-time shim);
    ``limit``: only the first ``limit`` frames were sent (replay.max_packets); ``cut``: how many of them the
    replay snap shortened (chimera.formats.snap: sent, and counted apart)."""
    n = len(replayed)
    limit = limit or n
    lost = ~got.received[:limit]
    runt = np.fromiter((len(f) < ETH_HEADER for f in replayed[:limit]), bool, limit) & lost
    too_big = np.fromiter((len(f) + overhead > sender_mtu + ETH_HEADER for f in replayed[:limit]), bool, limit)
    too_big &= lost & ~runt
    unsendable = runt | too_big
    reasons = []
    if runt.any():
        reasons.append(f"{int(runt.sum())} shorter than an Ethernet header ({ETH_HEADER} bytes): a runt the "
                       "capturing host recorded cannot leave a packet socket")
    if too_big.any():
        reasons.append(f"{int(too_big.sum())} larger than the sender's MTU ({sender_mtu} bytes)")
    if failed_to_send != int(unsendable.sum()):
        reasons.append(f"tcpreplay reported {failed_to_send} failed, {int(unsendable.sum())} are runts or oversized")
    if limit < n:
        reasons.append(f"replay.max_packets: only the first {limit} frames were sent")
    not_sent = max(failed_to_send, int(unsendable.sum())) + (n - limit)
    missing = n - int(got.received.sum()) - not_sent
    dropped = min(dropped_at_receiver, max(missing, 0))
    return Accounting(n, int(got.received.sum()), not_sent, "; ".join(reasons), dropped,
                      max(missing - dropped, 0), cut), unsendable


def span_rate(ts_ns: np.ndarray) -> float | None:
    """Packets per second over a capture's time span (None for fewer than two packets)."""
    ts = np.asarray(ts_ns)
    if ts.size < 2 or ts.max() <= ts.min():
        return None
    return float((ts.size - 1) / ((ts.max() - ts.min()) / 1e9))
