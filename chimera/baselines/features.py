"""Per-packet inputs of the baselines and yardsticks: the token features of the flow's last packets.

For a packet at position p of its flow, lag k (0 = the packet itself) holds the
features of the flow's packet p - k, or -1 before the flow's start. The fields
are the ones Chimera's tokens carry (IP length, IAT bucket, direction, TCP
flags) plus, per packet, whatever else Chimera reads (``extra``): a yardstick
always gets every input Chimera uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chimera.data.flows import Flows
from chimera.data.pcap import PacketTable
from chimera.data.tokens import Tokens, proto_class

TOKEN_FIELDS = ("ip_len", "iat_bucket", "direction", "tcp_flags")
MISSING = -1


@dataclass(frozen=True)
class WindowSpec:
    """What a baseline sees per decision: ``window`` packets of ``fields``, plus per-packet ``extra`` fields."""

    window: int = 8
    fields: tuple[str, ...] = TOKEN_FIELDS
    extra: tuple[str, ...] = ("proto",)

    @property
    def n_features(self) -> int:
        return self.window * len(self.fields) + len(self.extra)

    def names(self) -> list[str]:
        return [f"{f}[t-{k}]" for k in range(self.window) for f in self.fields] + list(self.extra)


FIELD_BITS = {"ip_len": 16, "iat_bucket": 4, "direction": 1, "tcp_flags": 8, "proto": 8, "proto_class": 2,
              "sport": 16, "dport": 16, "pkt_index": 8, "flow_bytes": 32}


def input_bits(spec: WindowSpec) -> int:
    """Bits of input per decision ("input scale"), from the fields' widths."""
    return spec.window * sum(FIELD_BITS[f] for f in spec.fields) + sum(FIELD_BITS[f] for f in spec.extra)


def _column(name: str, table: PacketTable, tokens: Tokens, flows: Flows) -> np.ndarray:
    if name in ("ip_len", "iat_bucket", "direction", "tcp_flags"):
        return getattr(tokens, name).astype(np.int64)
    if name == "proto":
        return table.proto.astype(np.int64)
    if name == "proto_class":
        return proto_class(table.proto).astype(np.int64)
    if name in ("sport", "dport"):
        return getattr(table, name).astype(np.int64)
    if name == "pkt_index":
        return np.minimum(flows.pkt_index, 255).astype(np.int64)
    if name == "flow_bytes":
        return flow_bytes(table, flows)
    raise KeyError(f"unknown baseline input field {name!r}")


def flow_bytes(table: PacketTable, flows: Flows) -> np.ndarray:
    """Bytes of the flow so far (IP lengths, this packet included)."""
    ok = flows.flow_id >= 0
    rows = np.flatnonzero(ok)
    order = rows[np.lexsort((flows.pkt_index[rows], flows.flow_id[rows]))]
    fid = flows.flow_id[order]
    lens = table.ip_len[order].astype(np.int64)
    cs = np.cumsum(lens)
    start = np.r_[True, fid[1:] != fid[:-1]]
    base = np.maximum.accumulate(np.where(start, cs - lens, 0))
    out = np.zeros(len(table), np.int64)
    out[order] = cs - base
    return out


def window_features(table: PacketTable, tokens: Tokens, flows: Flows, rows: np.ndarray,
                    spec: WindowSpec = WindowSpec()) -> np.ndarray:
    """[len(rows), spec.n_features] int64 features of packets ``rows`` (lag-major, then extra)."""
    ok = flows.flow_id >= 0
    all_rows = np.flatnonzero(ok)
    order = all_rows[np.lexsort((flows.pkt_index[all_rows], flows.flow_id[all_rows]))]
    pos_of = np.full(len(table), -1, np.int64)
    pos_of[order] = np.arange(order.size)
    fid_sorted = flows.flow_id[order]
    cols = {f: _column(f, table, tokens, flows) for f in set(spec.fields) | set(spec.extra)}
    out = np.full((rows.size, spec.n_features), MISSING, np.int64)
    pos = pos_of[rows]
    have = pos >= 0
    j = 0
    for k in range(spec.window):
        src = pos - k
        valid = have & (src >= 0)
        valid[valid] &= fid_sorted[src[valid]] == flows.flow_id[rows[valid]]
        src_rows = order[np.where(valid, src, 0)]
        for f in spec.fields:
            out[:, j] = np.where(valid, cols[f][src_rows], MISSING)
            j += 1
    for f in spec.extra:
        out[:, j] = cols[f][rows]
        j += 1
    return out
