"""Per-packet inputs of the baselines and yardsticks: the token features of the flow's last packets.

For a packet at position p of its flow, lag k (0 = the packet itself) holds the
features of the flow's packet p - k, or -1 before the flow's start. The fields
are the ones Chimera's tokens carry (IP length, IAT bucket, direction, TCP
flags) plus, per packet, whatever else Chimera reads (``extra``).

Every method gets the same information Chimera reads (``fair_inputs``): what
its token, value sub-tokens and rule key are built from (``chimera_reads``,
derived from those definitions, so a new input of Chimera's is a new input of
every baseline or a failing test), with the ports also in the forms a tree
splits on directly: the flow's lower and higher port (canonical order) and the
responder port (dport in the direction of the flow's first packet). Those are
functions of the two ports and the direction: no information Chimera does not have.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

import numpy as np

from chimera.data.flows import Flows
from chimera.data.pcap import PacketTable
from chimera.data.tokens import Tokens, proto_class
from chimera.model.tokenizer import MapTables
from chimera.rules.spec import KEY_FIELDS

TOKEN_FIELDS = ("ip_len", "iat_bucket", "direction", "tcp_flags")
MISSING = -1
#: the baselines' column names for Chimera's inputs where its own definitions use other words
ALIASES = {"dir": "direction", "flow_pkts": "pkt_index"}
#: the ports in the forms a tree splits on directly (derived from sport, dport and the direction)
PORT_ENCODINGS = ("lo_port", "hi_port", "responder_port")
#: per decision, beside the window of token fields: the current packet's other inputs
FAIR_EXTRA = ("proto", "sport", "dport", *PORT_ENCODINGS, "pkt_index")


def responder_port(sport: np.ndarray, dport: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """The port of the flow's responder: dport for packets in the first packet's direction, else sport."""
    return np.where(np.asarray(direction) == 0, dport, sport).astype(np.int64)


def chimera_reads() -> set[str]:
    """Every per-packet field Chimera's pipeline reads, from its own definitions: the token's fields
    (chimera.data.tokens.Tokens), the value sub-tokens' other arguments (MapTables.sub_tokens) and the rule key
    (chimera.rules.spec.KEY_FIELDS), named as the baselines' columns."""
    tok = {f.name for f in dataclasses.fields(Tokens)}
    sub = set(inspect.signature(MapTables.sub_tokens).parameters) - {"self", "tok"}
    rule = {name for name, _ in KEY_FIELDS}
    return {ALIASES.get(n, n) for n in tok | sub | rule}


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
              "sport": 16, "dport": 16, "pkt_index": 8, "flow_bytes": 32, "lo_port": 16, "hi_port": 16,
              "responder_port": 16}
#: fields that re-encode others (their bits are not more information read per decision)
DERIVED = frozenset(PORT_ENCODINGS)


def fair_inputs(window: int) -> WindowSpec:
    """What every method reads per decision: Chimera's window of token fields and the current packet's other
    inputs (``FAIR_EXTRA``)."""
    return WindowSpec(window=window, fields=TOKEN_FIELDS, extra=FAIR_EXTRA)


def input_bits(spec: WindowSpec) -> int:
    """Bits of input per decision ("input scale"), from the fields' widths; re-encodings of fields already
    read (the port encodings) add none."""
    return spec.window * sum(FIELD_BITS[f] for f in spec.fields) + \
        sum(FIELD_BITS[f] for f in spec.extra if f not in DERIVED)


def column(name: str, table: PacketTable, tokens: Tokens, flows: Flows) -> np.ndarray:
    """One per-packet input field (a name of ``FIELD_BITS``) for every packet of the table."""
    if name in ("ip_len", "iat_bucket", "direction", "tcp_flags"):
        return getattr(tokens, name).astype(np.int64)
    if name == "proto":
        return table.proto.astype(np.int64)
    if name == "proto_class":
        return proto_class(table.proto).astype(np.int64)
    if name in ("sport", "dport"):
        return getattr(table, name).astype(np.int64)
    if name in ("lo_port", "hi_port"):
        s, d = table.sport.astype(np.int64), table.dport.astype(np.int64)
        return np.minimum(s, d) if name == "lo_port" else np.maximum(s, d)
    if name == "responder_port":
        return responder_port(table.sport, table.dport, tokens.direction)
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
    cols = {f: column(f, table, tokens, flows) for f in set(spec.fields) | set(spec.extra)}
    return windowed(flows, rows, spec, cols)


def windowed(flows: Flows, rows: np.ndarray, spec: WindowSpec, cols: dict[str, np.ndarray]) -> np.ndarray:
    """The window matrix of ``spec`` over per-packet columns ``cols`` (every packet of the table): lag k of a
    row holds its flow's packet p - k, ``MISSING`` before the flow's start. Any per-packet encoding (exact
    fields, or Chimera's quantized ids) is windowed the same way."""
    ok = flows.flow_id >= 0
    all_rows = np.flatnonzero(ok)
    order = all_rows[np.lexsort((flows.pkt_index[all_rows], flows.flow_id[all_rows]))]
    pos_of = np.full(flows.flow_id.size, -1, np.int64)
    pos_of[order] = np.arange(order.size)
    fid_sorted = flows.flow_id[order]
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
