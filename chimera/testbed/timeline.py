"""Feature-preserving gap compression: shorten a trace's idle gaps without changing a single verdict.

On the switch's own clock a replay must keep the trace's timing, because the
inter-arrival bucket is a feature. But the bucket saturates: with IAT_SHIFT = 10
and 16 buckets, every inter-arrival of 2^13 units (about 8.4 ms) or more lands in
the last bucket. So a gap in the *whole* trace (no packet in between) can be
shortened to just above that saturation without moving any flow's bucket: a flow
whose packets straddle the gap still sees at least the shortened gap.

Two details make it exact rather than nearly so, and the result is verified:

- every gap shrinks by a multiple of 2^IAT_SHIFT ns, so ``(t - d) >> IAT_SHIFT`` is
  ``(t >> IAT_SHIFT) - (d >> IAT_SHIFT)`` exactly and no flooring moves a unit;
- the per-flow timestamp is 32 bits of units, so an inter-arrival wraps every
  2^32 units (about 73.3 minutes): a flow idle for that long sees its inter-arrival
  modulo 2^32, exactly as the reference computes it. Shortening a gap can move such
  a wrapped value into another bucket. The check below compares the bucket of every
  pair of consecutive packets of a flow slot (the pairs the dataplane computes an
  inter-arrival for) on both timelines; where one differs, the gaps between that
  pair are left uncompressed, and the check runs again until nothing differs.

A test runs the reference on the original and on the compressed timeline of a
trace with long gaps and wrap-around idles and requires identical verdicts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from chimera.data.pcap import PacketTable
from chimera.data.tokens import IAT_BUCKETS, IAT_SHIFT, TS_UNIT_MASK, bit_length, ts_units
from chimera.reference.pipeline import dataplane_parsed, flow_hash

log = logging.getLogger(__name__)
#: inter-arrivals of at least this many units land in the last bucket: bit_length(u) >= IAT_BUCKETS - 2
SATURATION_UNITS = 1 << (IAT_BUCKETS - 3)
#: a compressed gap keeps the saturation plus this margin (units)
MARGIN_UNITS = 2
KEEP_NS = (SATURATION_UNITS + MARGIN_UNITS) << IAT_SHIFT
MAX_ROUNDS = 50


@dataclass(frozen=True)
class Compression:
    """A compressed timeline and what it took."""

    ts_ns: np.ndarray        # the compressed timestamps (same order)
    enabled: bool
    gaps_compressed: int     # gaps shortened
    gaps_kept: int           # gaps left whole so a wrapped inter-arrival keeps its bucket
    removed_ns: int
    original_span_ns: int

    def as_dict(self) -> dict[str, Any]:  # JSON out: the timeline in the manifest
        return {"enabled": self.enabled, "gaps_compressed": self.gaps_compressed, "gaps_kept_for_wrap": self.gaps_kept,
                "removed_s": self.removed_ns / 1e9, "original_span_s": self.original_span_ns / 1e9,
                "span_s": span(self.ts_ns) / 1e9, "keep_gap_s": KEEP_NS / 1e9,
                "rule": "idle gaps shortened to the inter-arrival saturation (verdicts unchanged, verified)"}


def span(ts: np.ndarray) -> int:
    return int(ts.max() - ts.min()) if len(ts) else 0


def iat_buckets_of_pairs(ts: np.ndarray, prev: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The bucket the dataplane gives packet idx[k] after packet prev[k] of the same slot."""
    units = (ts_units(ts[idx]) - ts_units(ts[prev])) & TS_UNIT_MASK
    return 1 + np.minimum(bit_length(units), IAT_BUCKETS - 2)


def slot_pairs(table: PacketTable, flow_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """(previous, this) packet positions: consecutive parsed packets of the same flow slot."""
    parsed = np.flatnonzero(dataplane_parsed(table))
    if parsed.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    crc, _ = flow_hash(table.src4[parsed], table.dst4[parsed], table.sport[parsed], table.dport[parsed],
                       table.proto[parsed])
    slot = crc.astype(np.int64) & (flow_slots - 1)
    order = np.lexsort((parsed, slot))  # by slot, then arrival
    same = slot[order][1:] == slot[order][:-1]
    return parsed[order][:-1][same], parsed[order][1:][same]


def compress_gaps(table: PacketTable, flow_slots: int, ts_ns: np.ndarray | None = None) -> Compression:
    """The trace's timeline with every idle gap longer than KEEP_NS shortened to it (see the module text)."""
    ts = np.asarray(table.ts_ns if ts_ns is None else ts_ns, np.int64)
    n = ts.size
    if n < 2:
        return Compression(ts.copy(), True, 0, 0, 0, span(ts))
    if np.any(np.diff(ts) < 0):
        raise ValueError("gap compression needs a non-decreasing timeline (the replay order)")
    gaps = np.diff(ts)
    cut = np.where(gaps > KEEP_NS, (gaps - KEEP_NS) >> IAT_SHIFT << IAT_SHIFT, 0)
    prev, idx = slot_pairs(table, flow_slots)
    want = iat_buckets_of_pairs(ts, prev, idx)
    kept = np.zeros(gaps.size, bool)
    for _ in range(MAX_ROUNDS):
        new = ts - np.r_[0, np.cumsum(cut)]
        bad = np.flatnonzero(iat_buckets_of_pairs(new, prev, idx) != want)
        if bad.size == 0:
            return Compression(new, True, int((cut > 0).sum()), int(kept.sum()), int(cut.sum()), span(ts))
        # leave whole every gap between each differing pair (gap g lies between packets g and g + 1)
        marks = np.zeros(gaps.size + 1, np.int64)
        np.add.at(marks, prev[bad], 1)
        np.add.at(marks, idx[bad], -1)
        inside = np.cumsum(marks)[:-1] > 0
        kept |= inside & (cut > 0)
        cut = np.where(inside, 0, cut)
    log.warning("gap compression did not settle after %d rounds; replaying the original timeline", MAX_ROUNDS)
    return Compression(ts.copy(), False, 0, 0, 0, span(ts))
