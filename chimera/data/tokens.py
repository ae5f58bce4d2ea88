"""The Partition stage: one small integer token per packet.

These functions are the single definition of token features. Training calls
them on offline flows; the reference pipeline calls them on its flow-slot
state; the eBPF C and the P4 program implement the same arithmetic (shifts and
comparisons only, no division) and are tested against them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chimera.data.flows import Flows
from chimera.data.pcap import PacketTable, ParseStatus

#: Inter-arrival buckets. Flow state keeps a 32-bit timestamp in units of
#: 2**IAT_SHIFT ns (~1 µs, wrapping every ~73 min); the inter-arrival in those
#: units is (now >> IAT_SHIFT) - (last >> IAT_SHIFT) modulo 2**32, and the bucket
#: is 0 for a flow's first packet, else 1 + bit_length(units), capped at 15.
IAT_SHIFT = 10
IAT_BUCKETS = 16
TS_UNIT_MASK = 0xFFFFFFFF
#: Tokens carry the 8 TCP flag bits; protocol classes below.
PROTO_OTHER, PROTO_TCP, PROTO_UDP, PROTO_ICMP = 0, 1, 2, 3
PROTO_CLASSES = 4


def bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of non-negative int64 values, by comparisons (as the dataplane does it)."""
    x = np.asarray(x, np.int64)
    out = np.zeros(x.shape, np.int64)
    v = x.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        big = v >= (np.int64(1) << shift)
        out += np.where(big, shift, 0)
        v = np.where(big, v >> shift, v)
    return out + (v > 0)


def ts_units(ts_ns: np.ndarray) -> np.ndarray:
    """The 32-bit per-flow timestamp the dataplane stores."""
    return (np.asarray(ts_ns, np.int64) >> IAT_SHIFT) & TS_UNIT_MASK


def iat_bucket(units: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Log bucket of an inter-arrival given in ts units; 0 for first packets."""
    b = 1 + np.minimum(bit_length(np.asarray(units, np.int64) & TS_UNIT_MASK), IAT_BUCKETS - 2)
    return np.where(first, 0, b).astype(np.uint8)


def iat_bucket_of(ts_ns: np.ndarray, iat_ns: np.ndarray) -> np.ndarray:
    """Bucket from a packet's timestamp and its offline inter-arrival (-1 = first packet)."""
    iat_ns = np.asarray(iat_ns, np.int64)
    first = iat_ns < 0
    prev = np.asarray(ts_ns, np.int64) - np.maximum(iat_ns, 0)
    return iat_bucket((ts_units(ts_ns) - ts_units(prev)) & TS_UNIT_MASK, first)


def proto_class(proto: np.ndarray) -> np.ndarray:
    """IP protocol number -> small class id used by the Map and global tables."""
    proto = np.asarray(proto)
    return np.select([proto == 6, proto == 17, proto == 1], [PROTO_TCP, PROTO_UDP, PROTO_ICMP],
                     PROTO_OTHER).astype(np.uint8)


@dataclass
class Tokens:
    """Per-packet token features (only rows of dataplane-eligible packets are meaningful)."""

    ip_len: np.ndarray      # uint16
    iat_bucket: np.ndarray  # uint8
    direction: np.ndarray   # uint8
    tcp_flags: np.ndarray   # uint8
    proto: np.ndarray       # uint8 (IP protocol number)


def dataplane_eligible(table: PacketTable) -> np.ndarray:
    """Packets the switch pipeline classifies: untagged-or-not IPv4, parsed, not a fragment."""
    return (table.status == ParseStatus.OK) & (table.ip_version == 4)


def tokenize(table: PacketTable, flows: Flows) -> Tokens:
    """Token features of every packet from offline flow state."""
    return Tokens(ip_len=table.ip_len.copy(), iat_bucket=iat_bucket_of(table.ts_ns, flows.iat_ns),
                  direction=flows.direction.copy(), tcp_flags=table.tcp_flags.copy(),
                  proto=table.proto.copy())
