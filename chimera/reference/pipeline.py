"""The reference pipeline: the bit-exact integer model of the dataplane.

Its specification is docs/pipeline.md (steps 0-10, widths, state). This module
executes it in three passes over the packets, in arrival order: the stateful
core (flow slots, tokens, window ring, attention accumulators, centroid EMA,
token samples) as one numba loop; the rules, vectorized (they need only the
core's direction and packet counts); then fusion with the fast-path class prior
and the class EMA, sequential again (the prior depends on earlier verdicts).
The eBPF C and p4/chimera.p4 implement the same steps and are held to this
module verdict for verdict by the conformance tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from chimera.data.pcap import LINKTYPE_ETHERNET, PacketTable, ParseStatus
from chimera.data.tokens import PROTO_CLASSES, proto_class, ts_units
from chimera.formats.artifact import Artifact
from chimera.formats.verdict import NO_LABEL, NO_RULE, VerdictFlag
from chimera.model.tokenizer import flag_class, len_bin
from chimera.rules.spec import rule_keys
from chimera.rules.ternary import fires_by_group, first_match

PKTS_MAX = 0xFFFF

# --------------------------------------------------------------------------- hashing

_CRC_TABLE = np.zeros(256, np.uint32)
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0xEDB88320 if _c & 1 else _c >> 1
    _CRC_TABLE[_i] = _c


def crc32_columns(cols: list[np.ndarray]) -> np.ndarray:
    """CRC-32 (IEEE, as zlib.crc32) of per-row byte strings given as uint8 columns."""
    crc = np.full(cols[0].shape[0], 0xFFFFFFFF, np.uint32)
    for b in cols:
        crc = _CRC_TABLE[(crc ^ b.astype(np.uint32)) & 0xFF] ^ (crc >> np.uint32(8))
    return crc ^ np.uint32(0xFFFFFFFF)


def flow_hash(src4: np.ndarray, dst4: np.ndarray, sport: np.ndarray, dport: np.ndarray,
              proto: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(crc32 of the canonical 5-tuple, swap bit) for IPv4 packets."""
    s, d = src4.astype(np.uint64), dst4.astype(np.uint64)
    swap = (s > d) | ((s == d) & (sport > dport))
    lo_ip, hi_ip = np.where(swap, d, s), np.where(swap, s, d)
    lo_p, hi_p = np.where(swap, dport, sport).astype(np.uint64), np.where(swap, sport, dport).astype(np.uint64)
    cols = [(lo_ip >> np.uint64(sh)) & np.uint64(0xFF) for sh in (24, 16, 8, 0)]
    cols += [(hi_ip >> np.uint64(sh)) & np.uint64(0xFF) for sh in (24, 16, 8, 0)]
    cols += [(lo_p >> np.uint64(8)) & np.uint64(0xFF), lo_p & np.uint64(0xFF), (hi_p >> np.uint64(8)) & np.uint64(0xFF),
             hi_p & np.uint64(0xFF), proto.astype(np.uint64)]
    return crc32_columns(cols), swap.astype(np.uint8)


def dataplane_parsed(table: PacketTable) -> np.ndarray:
    """What the switch parser accepts (step 0)."""
    return ((table.linktype == LINKTYPE_ETHERNET) & ~table.vlan & (table.ethertype == 0x0800)
            & (table.ip_version == 4) & (table.status == ParseStatus.OK))


def pack_token(c: np.ndarray, sub: np.ndarray) -> np.ndarray:
    """The window token as the ring stores it: c | s0 << 8 | s1 << 24 | s2 << 32 | s3 << 40 | s4 << 48."""
    s = np.asarray(sub, np.int64)
    return (np.asarray(c, np.int64) | s[..., 0] << 8 | s[..., 1] << 24 | s[..., 2] << 32 | s[..., 3] << 40
            | s[..., 4] << 48)


def sample_word(ip_len: np.ndarray, iat_b: np.ndarray, direction: np.ndarray, fclass: np.ndarray,
                pclass: np.ndarray) -> np.ndarray:
    """A token sample as the sample buffer stores it (docs/pipeline.md step 9)."""
    return (np.asarray(ip_len, np.int64) << 16 | np.asarray(iat_b, np.int64) << 12 | np.asarray(direction, np.int64) << 11
            | np.asarray(fclass, np.int64) << 8 | np.asarray(pclass, np.int64) << 6)


def unpack_sample(words: np.ndarray) -> dict[str, np.ndarray]:
    w = np.asarray(words, np.int64)
    return {"ip_len": w >> 16 & 0xFFFF, "iat_bucket": w >> 12 & 0xF, "direction": w >> 11 & 1,
            "flag_class": w >> 8 & 0x7, "proto_class": w >> 6 & 0x3}


# --------------------------------------------------------------------------- state

@dataclass
class SwitchState:
    """Registers of the dataplane; kept between runs so a run can continue (e.g. across a table install)."""

    flow_slots: int
    window: int
    n_centroids: int
    n_classes: int
    features: int = 1
    d_v: int = 1
    incremental: bool = True
    sample_slots: int = 16
    sig: np.ndarray = field(init=False)
    pkts: np.ndarray = field(init=False)
    last: np.ndarray = field(init=False)
    orient: np.ndarray = field(init=False)
    head: np.ndarray = field(init=False)
    ring: np.ndarray = field(init=False)
    s_acc: np.ndarray = field(init=False)
    z_acc: np.ndarray = field(init=False)
    ema: np.ndarray = field(init=False)
    class_ema: np.ndarray = field(init=False)
    sample: np.ndarray = field(init=False)
    sample_count: np.ndarray = field(init=False)
    counters: np.ndarray = field(init=False)  # [evictions, new_flows, parsed, unparsed]

    def __post_init__(self) -> None:
        F, L = self.flow_slots, self.window
        self.sig = np.zeros(F, np.int64)
        self.pkts = np.zeros(F, np.int64)
        self.last = np.zeros(F, np.int64)
        self.orient = np.zeros(F, np.int64)
        self.head = np.zeros(F, np.int64)
        self.ring = np.zeros((F, L), np.int64)
        n = F if self.incremental else 1
        self.s_acc = np.zeros((n, self.features, self.d_v), np.int64)
        self.z_acc = np.zeros((n, self.features), np.int64)
        self.ema = np.zeros(self.n_centroids, np.int64)
        self.class_ema = np.zeros(self.n_classes, np.int64)
        self.sample = np.zeros(self.sample_slots, np.int64)
        self.sample_count = np.zeros(1, np.int64)
        self.counters = np.zeros(4, np.int64)

    def registers(self) -> dict[str, Any]:
        """The registers a control plane reads, shaped as the switches' ``registers()`` return them."""
        return {"ema": self.ema.copy(), "class_ema": self.class_ema.copy(), "sample": self.sample.copy(),
                "sample_count": int(self.sample_count[0]),
                "counters": dict(zip(("evictions", "new_flows", "parsed", "unparsed"), self.counters.tolist()))}

    @staticmethod
    def for_artifact(art: Artifact) -> "SwitchState":
        return SwitchState(art.c("FLOW_SLOTS"), art.c("WINDOW"), art.c("NUM_CENTROIDS"), art.c("NUM_CLASSES"),
                           art.c("RF_FEATURES"), art.c("D_V"), art.c("AGG_INCREMENTAL") == 1, art.c("SAMPLE_SLOTS"))


@dataclass
class Verdicts:
    """One verdict per packet (the fields the verdict header carries) plus debug columns."""

    label: np.ndarray      # uint8, NO_LABEL for unparsed
    flags: np.ndarray      # uint8 VerdictFlag bits
    score: np.ndarray      # uint32
    rule_id: np.ndarray    # uint8, NO_RULE when no hard rule matched
    centroid: np.ndarray   # uint8
    map_version: np.ndarray  # uint16
    fused: np.ndarray      # int64 [N, Y] (0 for unparsed)

    HEADER_FIELDS = ("label", "flags", "score", "rule_id", "centroid", "map_version")

    def __len__(self) -> int:
        return int(self.label.shape[0])


# --------------------------------------------------------------------------- tables as the core reads them

@dataclass
class CoreTables:
    """The artifact's tables in the dense shapes the numba core indexes."""

    map_tbl: np.ndarray
    port_id: np.ndarray        # [65536] responder port -> id
    values: tuple[np.ndarray, ...]
    phi_q: np.ndarray
    phi_k: np.ndarray
    kernel: np.ndarray
    w_out: np.ndarray

    @staticmethod
    def of(art: Artifact) -> "CoreTables":
        pid = np.zeros(65536, np.int64)
        pid[art.port_vocab] = np.arange(1, art.port_vocab.size + 1)
        return CoreTables(art.map.astype(np.int64), pid, tuple(np.ascontiguousarray(v, np.int64) for v in art.values),
                          np.ascontiguousarray(art.phi_q, np.int64), np.ascontiguousarray(art.phi_k, np.int64),
                          np.ascontiguousarray(art.kernel, np.int64), np.ascontiguousarray(art.w_out, np.int64))


# --------------------------------------------------------------------------- pass 1: the stateful core

@numba.njit(cache=True)
def _bit_length(x):  # pragma: no cover - jitted
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@numba.njit(cache=True, inline="always")
def _token_value(tok, v0, v1, v2, v3, v4, out):  # pragma: no cover - jitted
    """v(tok) = sum of the five value-table rows of the token's sub-tokens, into ``out``."""
    s0, s1, s2 = (tok >> 8) & 0xFFFF, (tok >> 24) & 0xFF, (tok >> 32) & 0xFF
    s3, s4 = (tok >> 40) & 0xFF, (tok >> 48) & 0xFF
    for e in range(out.shape[0]):
        out[e] = v0[s0, e] + v1[s1, e] + v2[s2, e] + v3[s3, e] + v4[s4, e]


@numba.njit(cache=True, inline="always")
def _ema_step(d, shift, shift2):  # pragma: no cover - jitted
    """The EMA increment for d = u - C: (d >> EMA_SHIFT) + (d >> EMA_SHIFT2), the second term only when
    EMA_SHIFT2 > 0 (eta = 2^-EMA_SHIFT + 2^-EMA_SHIFT2)."""
    return (d >> shift) + ((d >> shift2) if shift2 > 0 else 0)


@numba.njit(cache=True)
def _core(parsed, crc, swap, tsu, lbin, fbin, fclass, pclass, ip_len, sport, dport, map_tbl, port_id, v0, v1, v2, v3,
          v4, phi_q, phi_k, kernel, w_out, incremental, use_window, ema_shift, ema_shift2, ema_frac, sample_shift, sig,
          pkts, last,
          orient, head, ring, s_acc, z_acc, ema, sample, sample_count, counters):  # pragma: no cover - jitted
    n = parsed.shape[0]
    F = sig.shape[0]
    L = ring.shape[1]
    Y = w_out.shape[1]
    DV = w_out.shape[0]
    M = phi_q.shape[1]
    C = ema.shape[0]
    NS = sample.shape[0]
    cent = np.zeros(n, np.int64)
    direction = np.zeros(n, np.int64)
    flow_pkts = np.zeros(n, np.int64)
    flags = np.zeros(n, np.int64)
    A = np.zeros((n, Y), np.int64)
    Z = np.zeros(n, np.int64)
    vin = np.zeros(DV, np.int64)
    vout = np.zeros(DV, np.int64)
    h = np.zeros(DV, np.int64)
    smask = (np.int64(1) << sample_shift) - 1
    for i in range(n):
        if not parsed[i]:
            counters[3] += 1
            continue
        take_sample = (counters[2] & smask) == 0
        counters[2] += 1
        s = np.int64(crc[i]) & (F - 1)
        if pkts[s] > 0 and sig[s] != crc[i]:
            flags[i] |= 0x04  # EVICTED
            counters[0] += 1
            pkts[s] = 0
        if pkts[s] == 0:
            flags[i] |= 0x08  # NEW_FLOW
            counters[1] += 1
            sig[s] = crc[i]
            orient[s] = swap[i]
            head[s] = 0
            iat_b = 0
            if incremental:
                s_acc[s, :, :] = 0
                z_acc[s, :] = 0
        else:
            units = (tsu[i] - last[s]) & 0xFFFFFFFF
            iat_b = 1 + min(_bit_length(units), 14)
        d = swap[i] ^ orient[s]
        key = (((np.int64(lbin[i]) * 16 + iat_b) * 2 + d) * 8 + fclass[i]) * 4 + pclass[i]
        c = map_tbl[key]
        npk = min(pkts[s] + 1, 0xFFFF)
        resp = dport[i] if d == 0 else sport[i]
        tok = (c | (fbin[i] * 2 + d) << 8 | (iat_b * 2 + d) << 24 | (fclass[i] * 4 + pclass[i]) << 32
               | (port_id[resp] * 2 + d) << 40 | min(_bit_length(npk), 15) << 48)
        if incremental:
            if pkts[s] >= L:  # the token at head leaves the window
                old = ring[s, head[s]]
                co = old & 0xFF
                _token_value(old, v0, v1, v2, v3, v4, vout)
                for j in range(M):
                    z_acc[s, j] -= phi_k[co, j]
                    for e in range(DV):
                        s_acc[s, j, e] -= phi_k[co, j] * vout[e]
            _token_value(tok, v0, v1, v2, v3, v4, vin)
            for j in range(M):
                z_acc[s, j] += phi_k[c, j]
                for e in range(DV):
                    s_acc[s, j, e] += phi_k[c, j] * vin[e]
        ring[s, head[s]] = tok
        head[s] = (head[s] + 1) & (L - 1)
        pkts[s] = npk
        last[s] = tsu[i]
        if use_window:
            if incremental:
                for e in range(DV):
                    acc = np.int64(0)
                    for j in range(M):
                        acc += phi_q[c, j] * s_acc[s, j, e]
                    h[e] = acc
                for y in range(Y):
                    acc = np.int64(0)
                    for e in range(DV):
                        acc += w_out[e, y] * h[e]
                    A[i, y] = acc
                acc = np.int64(0)
                for j in range(M):
                    acc += phi_q[c, j] * z_acc[s, j]
                Z[i] = acc
            else:  # batch: re-sum the window with the kernel table
                for k in range(min(npk, L)):
                    t = ring[s, k]
                    kk = kernel[c, t & 0xFF]
                    _token_value(t, v0, v1, v2, v3, v4, vout)
                    Z[i] += kk
                    for y in range(Y):
                        u = np.int64(0)
                        for e in range(DV):
                            u += w_out[e, y] * vout[e]
                        A[i, y] += kk * u
        for j in range(C):
            u_j = np.int64(1) << ema_frac if j == c else np.int64(0)
            ema[j] += _ema_step(u_j - ema[j], ema_shift, ema_shift2)
        if take_sample:
            sample[sample_count[0] & (NS - 1)] = (ip_len[i] << 16 | iat_b << 12 | d << 11 | fclass[i] << 8
                                                  | pclass[i] << 6)
            sample_count[0] += 1
        cent[i] = c
        direction[i] = d
        flow_pkts[i] = npk
    return cent, direction, flow_pkts, flags, A, Z


# --------------------------------------------------------------------------- pass 3: fusion with the fast path

@numba.njit(cache=True)
def _fuse(parsed, A, Z, S, hard_label, alpha, beta, gamma, lambda_h, ema_shift, ema_shift2, ema_frac, class_ema):
    # pragma: no cover - jitted
    n, Y = A.shape
    label = np.full(n, 0xFF, np.int64)
    score = np.zeros(n, np.int64)
    veto = np.zeros(n, np.bool_)
    fused = np.zeros((n, Y), np.int64)
    for i in range(n):
        if not parsed[i]:
            continue
        best = 0
        for y in range(Y):
            fused[i, y] = alpha * A[i, y] + beta * S[i, y] * Z[i] + ((gamma * class_ema[y] * Z[i]) >> ema_frac)
            if fused[i, y] > fused[i, best]:
                best = y
        second = fused[i, best]
        have = False
        for y in range(Y):
            if y != best and (not have or fused[i, y] > second):
                second = fused[i, y]
                have = True
        margin = fused[i, best] - second
        lab = best
        sc = min(margin, np.int64(0xFFFFFFFF))
        if hard_label[i] >= 0 and lambda_h == 1:
            lab = hard_label[i]
            sc = np.int64(0xFFFFFFFF)
            veto[i] = True
        label[i] = lab
        score[i] = sc
        for y in range(Y):
            u = np.int64(1) << ema_frac if y == lab else np.int64(0)
            class_ema[y] += _ema_step(u - class_ema[y], ema_shift, ema_shift2)
    return label, score, veto, fused


# --------------------------------------------------------------------------- pipeline

def global_dense(art: Artifact) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The global ternary table resolved for every (centroid, protocol class): first match wins."""
    C, Y = art.c("NUM_CENTROIDS"), art.c("NUM_CLASSES")
    cc, pp = np.meshgrid(np.arange(C), np.arange(PROTO_CLASSES), indexing="ij")
    ge = art.global_entries
    idx = first_match(np.column_stack([cc.ravel(), pp.ravel()]), ge[:, [0, 2]], ge[:, [1, 3]]).reshape(C, PROTO_CLASSES)
    hit = idx >= 0
    rows = ge[np.maximum(idx, 0)] if len(ge) else np.zeros((C, PROTO_CLASSES, 4 + Y + 1), np.int64)
    g = np.where(hit[..., None], rows[..., 4:4 + Y], 0).astype(np.int64)
    gz = np.where(hit, rows[..., 4 + Y], 0).astype(np.int64)
    return g, gz, hit


def soft_scores(art: Artifact, keys: np.ndarray) -> np.ndarray:
    """S_y per packet: sum of weights of soft rules with any matching entry."""
    se = art.soft_entries
    fires = fires_by_group(keys, se[:, :7], se[:, 7:14], se[:, 14], art.c("SOFT_RULES"))
    return fires.astype(np.int64) @ art.soft_weights.reshape(-1, art.c("NUM_CLASSES"))


def ema_shift2(art: Artifact) -> int:
    """EMA_SHIFT2 (0: a single-shift step)."""
    return int(art.constants.get("EMA_SHIFT2", 0))


def run_reference(art: Artifact, table: PacketTable, ts_ns: np.ndarray | None = None,
                  state: SwitchState | None = None) -> tuple[Verdicts, SwitchState]:
    """Verdict of every packet of ``table`` (in row order); ``ts_ns`` overrides the switch clock."""
    n = len(table)
    ts = table.ts_ns if ts_ns is None else np.asarray(ts_ns, np.int64)
    st = state if state is not None else SwitchState.for_artifact(art)
    parsed = dataplane_parsed(table)
    crc, swap = flow_hash(table.src4, table.dst4, table.sport, table.dport, table.proto)
    fc = flag_class(table.tcp_flags, art.flag_ternary).astype(np.int64)
    pc = proto_class(table.proto).astype(np.int64)
    ct = CoreTables.of(art)
    cent, direction, fpk, flags, A, Z = _core(
        parsed, crc.astype(np.int64), swap.astype(np.int64), ts_units(ts), len_bin(table.ip_len, art.len_lo),
        len_bin(table.ip_len, art.len_fine_lo), fc, pc, table.ip_len.astype(np.int64), table.sport.astype(np.int64),
        table.dport.astype(np.int64), ct.map_tbl, ct.port_id, *ct.values, ct.phi_q, ct.phi_k, ct.kernel, ct.w_out,
        art.c("AGG_INCREMENTAL") == 1, art.c("USE_WINDOW") == 1, art.c("EMA_SHIFT"), ema_shift2(art), art.c("EMA_FRAC"),
        art.c("SAMPLE_SHIFT"), st.sig, st.pkts, st.last, st.orient, st.head, st.ring, st.s_acc, st.z_acc, st.ema,
        st.sample, st.sample_count, st.counters)
    g, gz, ghit = global_dense(art)
    A = A + g[cent, pc]
    Z = Z + gz[cent, pc]
    flags = flags | np.where(ghit[cent, pc], int(VerdictFlag.GLOBAL_HIT), 0)
    keys = rule_keys(table.proto, table.tcp_flags, direction, fpk, table.sport, table.dport, table.ip_len)
    hard_idx = first_match(keys, art.hard[:, :7], art.hard[:, 7:14])
    has_hard = hard_idx >= 0
    hard_label = np.where(has_hard, art.hard[np.maximum(hard_idx, 0), 15] if len(art.hard) else 0, -1)
    rule = np.where(has_hard, art.hard[np.maximum(hard_idx, 0), 14] if len(art.hard) else 0, NO_RULE)
    label, score, veto, fused = _fuse(parsed, A, Z, soft_scores(art, keys), hard_label.astype(np.int64),
                                      art.c("ALPHA"), art.c("BETA"), art.c("GAMMA"), art.c("LAMBDA_H"),
                                      art.c("EMA_SHIFT"), ema_shift2(art), art.c("EMA_FRAC"), st.class_ema)
    flags = flags | np.where(veto, int(VerdictFlag.HARD_VETO), 0)
    # unparsed packets: forwarded with a flag and no classification
    label = np.where(parsed, label, NO_LABEL)
    rule = np.where(parsed, rule, NO_RULE)
    flags = np.where(parsed, flags, int(VerdictFlag.UNPARSED))
    v = Verdicts(label=label.astype(np.uint8), flags=flags.astype(np.uint8), score=score.astype(np.uint32),
                 rule_id=rule.astype(np.uint8), centroid=np.where(parsed, cent, 0).astype(np.uint8),
                 map_version=np.full(n, art.c("MAP_VERSION"), np.uint16), fused=fused)
    return v, st


# --------------------------------------------------------------------------- live table updates

def concat_verdicts(parts: list[Verdicts]) -> Verdicts:
    """Verdicts of consecutive packet ranges as one."""
    return Verdicts(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                      ("label", "flags", "score", "rule_id", "centroid", "map_version", "fused")))


def run_reference_segments(arts: list[Artifact], starts: list[int], table: PacketTable,
                           ts_ns: np.ndarray | None = None,
                           state: SwitchState | None = None) -> tuple[Verdicts, SwitchState]:
    """Packets ``starts[k]`` up to ``starts[k + 1]`` computed with ``arts[k]`` (``starts[0]`` = 0), the state
    carried across: a table install between two packets, as the switch does it (the versions' flip)."""
    ts = table.ts_ns if ts_ns is None else np.asarray(ts_ns, np.int64)
    st = state if state is not None else SwitchState.for_artifact(arts[0])
    bounds = [*starts, len(table)]
    parts = []
    for art, a, b in zip(arts, bounds[:-1], bounds[1:]):
        if b > a:
            v, st = run_reference(art, table.take(slice(a, b)), ts_ns=ts[a:b], state=st)  # type: ignore[arg-type]
            parts.append(v)
    if not parts:
        return run_reference(arts[0], table, ts_ns=ts, state=st)
    return concat_verdicts(parts), st


def run_reference_versions(arts: dict[int, Artifact], table: PacketTable, versions: np.ndarray,
                           ts_ns: np.ndarray | None = None) -> tuple[Verdicts, SwitchState]:
    """The reference on the switch's own record of its installs: packet i is computed with the tables of
    ``versions[i]`` (the map version in its verdict header), switching exactly where the switch did."""
    v = np.asarray(versions, np.int64)
    missing = sorted(set(np.unique(v).tolist()) - set(arts))
    if missing:
        raise KeyError(f"map versions {missing} were seen in verdicts but never installed")
    starts = [0, *(np.flatnonzero(v[1:] != v[:-1]) + 1).tolist()] if v.size else [0]
    return run_reference_segments([arts[int(v[s])] if v.size else next(iter(arts.values())) for s in starts],
                                  starts, table, ts_ns)
