"""Join captured verdicts with the replayed packets.

Every received frame is stripped of its verdict header; the recovered frame
must equal a replayed frame byte for byte. Frames are matched in order (the
single path h1 - s1 - h2 keeps order; identical frames match in turn), so each
verdict belongs to exactly one replayed packet. Replayed packets without a
verdict are *lost* and counted; received frames that match nothing (traffic
the hosts themselves sent) are *foreign* and counted.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chimera.data.pcap import read_raw
from chimera.formats.verdict import FIELD_NAMES, NO_LABEL, NO_RULE, strip
from chimera.reference.pipeline import Verdicts


@dataclass
class Collected:
    verdicts: Verdicts          # one per replayed packet (lost ones: label NO_LABEL, flags 0)
    received: np.ndarray        # bool per replayed packet
    ts_in: np.ndarray           # int64 switch ingress ns (monotonic clock), 0 if lost
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


def collect(replayed: list[bytes], sent_pcap: Path, recv_pcap: Path) -> Collected:
    n = len(replayed)
    index: dict[bytes, collections.deque[int]] = collections.defaultdict(collections.deque)
    for i, f in enumerate(replayed):
        index[f].append(i)
    f_label = np.full(n, NO_LABEL, np.uint8)
    f_flags = np.zeros(n, np.uint8)
    f_score = np.zeros(n, np.uint32)
    f_rule = np.full(n, NO_RULE, np.uint8)
    f_cent = np.zeros(n, np.uint8)
    f_ver = np.zeros(n, np.uint16)
    ts_in, ts_out, t_recv, t_send = (np.zeros(n, np.int64) for _ in range(4))
    got = np.zeros(n, bool)
    foreign = unmarked = 0
    frames, times = _frames(recv_pcap)
    for fr, t in zip(frames, times):
        try:
            fields, orig = strip(fr)
        except ValueError:
            unmarked += 1
            continue
        q = index.get(orig)
        if not q:
            foreign += 1
            continue
        i = q.popleft()
        got[i] = True
        f = dict(zip(FIELD_NAMES, fields))
        f_flags[i], f_label[i], f_rule[i], f_score[i] = f["flags"], f["label"], f["rule_id"], f["score"]
        f_ver[i], f_cent[i], ts_in[i], ts_out[i] = f["map_version"], f["centroid"], f["ts_in"], f["ts_out"]
        t_recv[i] = t
    # send timestamps: the same in-order matching on what h1 put on the wire
    sidx: dict[bytes, collections.deque[int]] = collections.defaultdict(collections.deque)
    for i, f in enumerate(replayed):
        sidx[f].append(i)
    sframes, stimes = _frames(sent_pcap)
    for fr, t in zip(sframes, stimes):
        q = sidx.get(fr)
        if q:
            t_send[q.popleft()] = t
    v = Verdicts(label=f_label, flags=f_flags, score=f_score, rule_id=f_rule, centroid=f_cent, map_version=f_ver,
                 fused=np.zeros((n, 0), np.int64))
    return Collected(v, got, ts_in, ts_out, t_send, t_recv, foreign, unmarked)


def latency_summary(c: Collected) -> dict[str, float]:
    """In-switch (header timestamps) and host-to-host (h1 send -> h2 receive) percentiles, µs."""
    out: dict[str, float] = {}
    sw = (c.ts_out - c.ts_in)[c.received] / 1e3
    hh_ok = c.received & (c.t_send > 0)
    hh = (c.t_recv - c.t_send)[hh_ok] / 1e3
    for name, arr in (("switch", sw), ("host", hh)):
        if arr.size:
            out[f"latency_{name}_p50_us"] = float(np.percentile(arr, 50))
            out[f"latency_{name}_p99_us"] = float(np.percentile(arr, 99))
    return out


def per_packet_latency(c: Collected) -> dict[str, np.ndarray]:
    """Per replayed packet, µs (NaN where unknown): in-switch from the verdict header's timestamps, host-to-host
    from the h1 and h2 captures. The latency experiment keeps every value, not only percentiles."""
    sw = np.where(c.received, (c.ts_out - c.ts_in) / 1e3, np.nan)
    hh = np.where(c.received & (c.t_send > 0), (c.t_recv - c.t_send) / 1e3, np.nan)
    return {"switch_us": sw.astype(float), "host_us": hh.astype(float)}


def rates(c: Collected) -> dict[str, float]:
    """The offered rate (h1's send timestamps), the rate the switch saw (its ingress timestamps) and the rate
    delivered to h2 (its capture timestamps), pps."""
    out: dict[str, float] = {}
    for name, ts in (("sent_pps", c.t_send[c.t_send > 0]), ("switch_pps", c.ts_in[c.received]),
                     ("recv_pps", c.t_recv[c.received & (c.t_recv > 0)])):
        r = span_rate(ts)
        if r is not None:
            out[name] = r
    return out


@dataclass
class Accounting:
    """Where every replayed frame ended: exactly one of these, and they sum to ``replayed``."""

    replayed: int
    verdicts: int                # arrived at h2 with a verdict
    not_sent: int                # tcpreplay could not send them (reason below)
    not_sent_reason: str
    dropped_by_capture: int      # the switch forwarded them; the kernel dropped them before tcpdump at h2
    lost: int                    # unexplained: sent, not captured, no tool reports a drop

    def as_dict(self) -> dict[str, int | str]:
        return {"replayed": self.replayed, "verdicts": self.verdicts, "not_sent": self.not_sent,
                "not_sent_reason": self.not_sent_reason, "dropped_by_capture": self.dropped_by_capture,
                "lost": self.lost}


def account(replayed: list[bytes], got: Collected, failed_to_send: int, dropped_at_receiver: int,
            sender_mtu: int) -> tuple[Accounting, np.ndarray]:
    """The accounting of a replay, and which frames were not sent (frames larger than the sender's MTU
    cannot leave it; tcpreplay counts them as failed)."""
    too_big = np.fromiter((len(f) > sender_mtu + 14 for f in replayed), bool, len(replayed)) & ~got.received
    reason = f"larger than the sender's MTU ({sender_mtu} bytes)"
    if failed_to_send != int(too_big.sum()):
        reason += f"; tcpreplay reported {failed_to_send} failed, {int(too_big.sum())} are oversized"
    not_sent = max(failed_to_send, int(too_big.sum()))
    missing = len(replayed) - int(got.received.sum()) - not_sent
    dropped = min(dropped_at_receiver, max(missing, 0))
    return Accounting(len(replayed), int(got.received.sum()), not_sent, reason if not_sent else "",
                      dropped, max(missing - dropped, 0)), too_big


def span_rate(ts_ns: np.ndarray) -> float | None:
    """Packets per second over a capture's time span (None for fewer than two packets)."""
    ts = np.asarray(ts_ns)
    if ts.size < 2 or ts.max() <= ts.min():
        return None
    return float((ts.size - 1) / ((ts.max() - ts.min()) / 1e9))
