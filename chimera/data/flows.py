"""Bidirectional flows: canonical 5-tuple ids, direction, per-flow index, inter-arrivals, the split.

A flow is the canonical (lower endpoint, higher endpoint, protocol) 5-tuple
within one capture file; "direction" is 0 for packets sent the way the flow's
first packet went and 1 for the reverse, which is also what the dataplane
stores in its flow slot (docs/pipeline.md, step 2).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from chimera.data.pcap import PacketTable, ParseStatus
from chimera.errors import DatasetError

SPLITS = ("train", "val", "test")
SPLIT_FRACTIONS = (0.75, 0.10, 0.15)


@dataclass
class Flows:
    """Per-packet flow columns plus per-flow summaries."""

    flow_id: np.ndarray      # int64 per packet, -1 for packets that belong to no flow
    direction: np.ndarray    # uint8 per packet
    pkt_index: np.ndarray    # int64 per packet: position within its flow (0 = first)
    iat_ns: np.ndarray       # int64 per packet: time since the flow's previous packet (-1 first)
    first_packet: np.ndarray  # int64 per flow: row of its first packet
    n_packets: np.ndarray    # int64 per flow

    @property
    def n_flows(self) -> int:
        return int(self.first_packet.shape[0])


def flow_eligible(table: PacketTable) -> np.ndarray:
    """Packets that have a 5-tuple: parsed IPv4/IPv6, not fragments."""
    return table.status == ParseStatus.OK


def _addr_words(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    be = a.view(">u8").reshape(-1, 2)
    return be[:, 0].astype(np.uint64), be[:, 1].astype(np.uint64)


def canonical_orientation(table: PacketTable) -> np.ndarray:
    """True where (src, sport) sorts after (dst, dport): the packet is 'swapped'."""
    sh, sl = _addr_words(np.ascontiguousarray(table.src))
    dh, dl = _addr_words(np.ascontiguousarray(table.dst))
    sp, dp = table.sport, table.dport
    src_le = (sh < dh) | ((sh == dh) & ((sl < dl) | ((sl == dl) & (sp <= dp))))
    return ~src_le


def assign_flows(table: PacketTable) -> Flows:
    """Group packets into bidirectional flows (per capture file), in order of first packet."""
    n = len(table)
    ok = flow_eligible(table)
    idx = np.flatnonzero(ok)
    swap = canonical_orientation(table)[idx]
    sh, sl = _addr_words(np.ascontiguousarray(table.src[idx]))
    dh, dl = _addr_words(np.ascontiguousarray(table.dst[idx]))
    sp, dp = table.sport[idx].astype(np.uint64), table.dport[idx].astype(np.uint64)
    lo_h, lo_l, lo_p = np.where(swap, dh, sh), np.where(swap, dl, sl), np.where(swap, dp, sp)
    hi_h, hi_l, hi_p = np.where(swap, sh, dh), np.where(swap, sl, dl), np.where(swap, sp, dp)
    tail = (table.capture[idx].astype(np.uint64) << np.uint64(40)) | (table.proto[idx].astype(np.uint64) << np.uint64(32)) \
        | (lo_p << np.uint64(16)) | hi_p
    keys = np.stack([lo_h, lo_l, hi_h, hi_l, tail], axis=1)
    flow_id = np.full(n, -1, np.int64)
    direction = np.zeros(n, np.uint8)
    pkt_index = np.zeros(n, np.int64)
    iat = np.full(n, -1, np.int64)
    if idx.size == 0:
        z = np.zeros(0, np.int64)
        return Flows(flow_id, direction, pkt_index, iat, z, z)
    _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    # renumber flows by order of first appearance
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    fid = rank[inv]
    flow_id[idx] = fid
    first_rows = idx[first[order]]
    # direction relative to the flow's first packet
    first_swap = swap[first[order]]
    direction[idx] = (swap != first_swap[fid]).astype(np.uint8)
    # per-flow index and inter-arrival: stable sort by flow keeps capture order within a flow
    s = np.argsort(fid, kind="stable")
    fs = fid[s]
    starts = np.r_[True, fs[1:] != fs[:-1]]
    grp_start = np.maximum.accumulate(np.where(starts, np.arange(fs.size), 0))
    pos = np.arange(fs.size) - grp_start
    rows = idx[s]
    pkt_index[rows] = pos
    ts = table.ts_ns[rows]
    d = np.r_[-1, np.diff(ts)]
    d[starts] = -1
    iat[rows] = np.where(starts, -1, np.maximum(d, 0))
    counts = np.bincount(fid, minlength=order.size).astype(np.int64)
    return Flows(flow_id, direction, pkt_index, iat, first_rows.astype(np.int64), counts)


#: the frozen test partition's rule, written down before any run read it (docs/fidelity.md, "The test partition"):
#: a group's place in its class's order is sha256 of this salt and its key; the first TEST fraction of each
#: class's groups is the test partition, whatever the seed
TEST_RULE_SALT = "chimera-test-partition-v1:"


def _rank(key: str) -> str:
    return hashlib.sha256((TEST_RULE_SALT + key).encode()).hexdigest()


def frozen_split(flow_labels: np.ndarray, group_keys: list[str], seed: int,
                 fractions: tuple[float, float, float] = SPLIT_FRACTIONS,
                 flow_keys: list[str] | None = None) -> np.ndarray:
    """Train (0), val (1) or test (2) per flow: the test partition fixed by a hash rule, the seed re-splitting
    only the rest.

    ``group_keys`` names each flow's group: its capture file on a real dataset (a file is never split across
    partitions), the flow itself on a synthetic one. Within each class, groups are ordered by the hash of
    ``TEST_RULE_SALT`` and their key, and the first ``fractions[2]`` of them (at least one where the class has
    three or more) are the test partition, the same for every seed. The seed shuffles the other flows of the
    class and cuts them into train and validation at the remaining fractions (at least one validation flow where
    the class has two or more left). A group whose flows carry several labels is placed by its first flow's.
    A class with fewer than three groups but three or more flows (a real class recorded in one or two files) is
    partitioned by its flows instead, keyed by ``flow_keys``: a file cannot be split three ways.
    """
    if abs(sum(fractions) - 1.0) > 1e-9:
        raise DatasetError(f"split fractions {fractions} do not sum to 1", "use e.g. 0.75, 0.10, 0.15")
    if len(group_keys) != flow_labels.shape[0]:
        raise DatasetError(f"{len(group_keys)} group keys for {flow_labels.shape[0]} flows", "rebuild the dataset")
    keys = np.asarray(group_keys, dtype=object)
    if flow_keys is not None:
        for y in np.unique(flow_labels):
            m = flow_labels == y
            if len(set(keys[m])) < 3 <= int(m.sum()):
                keys[m] = np.asarray(flow_keys, dtype=object)[m]
    label_of: dict[str, int] = {}
    for k, y in zip(keys, flow_labels):
        label_of.setdefault(k, int(y))
    test: set[str] = set()
    for y in np.unique(flow_labels):
        groups = sorted((g for g, gy in label_of.items() if gy == y), key=_rank)
        n_test = int(round(fractions[2] * len(groups)))
        if len(groups) >= 3:
            n_test = max(n_test, 1)
        test |= set(groups[:n_test])
    in_test = np.fromiter((k in test for k in keys), bool, keys.size)
    split = np.where(in_test, 2, 0).astype(np.int8)
    rng = np.random.default_rng(seed)
    for y in np.unique(flow_labels):
        rest = np.flatnonzero((flow_labels == y) & ~in_test)
        rest = rest[rng.permutation(rest.size)]
        n_val = int(round(fractions[1] / (fractions[0] + fractions[1]) * rest.size))
        if rest.size >= 2:
            n_val = max(n_val, 1)
        split[rest[:n_val]] = 1
    return split


def sample_whole_flows(rows: np.ndarray, flow_id: np.ndarray, max_packets: int, seed: int) -> np.ndarray:
    """``rows`` (of one split), or whole flows of them drawn with ``seed`` until ``max_packets`` are reached:
    the one training sample every method of a comparison trains on (``flow_id``: of every row of the table)."""
    if not max_packets or rows.size <= max_packets:
        return rows
    fid = flow_id[rows]
    flows = np.unique(fid)
    order = np.random.default_rng(seed).permutation(flows)
    sizes = np.bincount(fid, minlength=int(flows.max()) + 1)[order]
    chosen = order[: max(1, int(np.searchsorted(np.cumsum(sizes), max_packets, side="right")))]
    return rows[np.isin(fid, chosen)]
