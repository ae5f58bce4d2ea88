"""The reference pipeline: the bit-exact integer model of the dataplane (the golden model).

Its specification is docs/pipeline.md. ``_packet`` below executes steps 0-10 for
one packet in the order and with the numbers the document gives them, so it can
be read beside the spec, ``chimera.bpf.c`` and ``chimera.p4`` step by step; the
per-packet loop ``_pipeline`` is plain sequential code (numba), one packet after
another, with the state carried in ``State``.

Inputs are grouped as the spec groups them: ``Packet`` (the parsed header fields
and the clock of each packet), ``Tables`` (the installed tables, as the dataplane
indexes them: range and ternary tables resolved to dense arrays by their one
definitions in chimera.model.tokenizer and chimera.rules.ternary), ``Params``
(the artifact's coefficients) and ``State`` (the registers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np

from chimera.data.pcap import LINKTYPE_ETHERNET, PacketTable, ParseStatus
from chimera.data.tokens import IAT_BUCKETS, IAT_SHIFT, PROTO_CLASSES, TS_UNIT_MASK
from chimera.formats import coverage as cov
from chimera.formats.artifact import Artifact
from chimera.formats.coverage import (COV_CLOCK_WRAP, COV_EMA_STALL, COV_EVICT, COV_GLOBAL_HIT, COV_GLOBAL_MISS,
                                      COV_HARD_HIT, COV_HARD_MISS, COV_IAT_TOP, COV_MARGIN_CLAMP, COV_NEW_FLOW,
                                      COV_NO_VETO, COV_PARSED, COV_PKTS_SATURATED, COV_PORT_BOTH, COV_PORT_HIT,
                                      COV_PORT_MISS, COV_PRIOR, COV_PROTO_ICMP, COV_PROTO_OTHER, COV_PROTO_TCP, COV_PROTO_UDP,
                                      COV_REVERSE_DIR, COV_SAME_FLOW, COV_SAMPLE, COV_SAMPLE_WRAP, COV_SOFT_FIRED,
                                      COV_SOFT_NONE, COV_TIE, COV_UNPARSED, COV_VETO, COV_WINDOW_FULL)
from chimera.formats.registers import Registers
from chimera.formats.verdict import NO_LABEL, NO_RULE, SCORE_MAX, VerdictFlag
from chimera.model.tokenizer import DIRS, FLAG_CLASSES, IDX_BUCKETS, flag_class, len_bin
from chimera.rules.spec import FLOW_PKTS_SATURATION, KEY_FIELDS
from chimera.rules.ternary import first_match, matches

PKTS_MAX = 0xFFFF                      # the per-flow packet count saturates (16 bits)
ETH_P_IPV4 = 0x0800
COUNTER_NAMES = ("evictions", "new_flows", "parsed", "unparsed")
CNT_EVICTIONS, CNT_NEW_FLOWS, CNT_PARSED, CNT_UNPARSED = range(4)
F_HARD_VETO, F_EVICTED, F_NEW_FLOW, F_GLOBAL_HIT = (int(VerdictFlag.HARD_VETO), int(VerdictFlag.EVICTED),
                                                    int(VerdictFlag.NEW_FLOW), int(VerdictFlag.GLOBAL_HIT))
RULE_KEY_LEN = len(KEY_FIELDS)         # proto, tcp_flags, dir, flow_pkts, sport, dport, ip_len

# ---- the window token (step 3c): c | s0 << 8 | s1 << 24 | s2 << 32 | s3 << 40 | s4 << 48
TOK_C_MASK = 0xFF
TOK_S0_SHIFT, TOK_S0_MASK = 8, 0xFFFF
TOK_S1_SHIFT, TOK_S2_SHIFT, TOK_S3_SHIFT, TOK_S4_SHIFT = 24, 32, 40, 48
TOK_SUB_MASK = 0xFF
# ---- the token sample word (step 9): ip_len << 16 | iat << 12 | dir << 11 | fc << 8 | pc << 6
SMP_LEN_SHIFT, SMP_IAT_SHIFT, SMP_DIR_SHIFT, SMP_FC_SHIFT, SMP_PC_SHIFT = 16, 12, 11, 8, 6


@numba.vectorize(["int64(int64, int64, int64, int64, int64, int64)"], cache=True)
def pack_token(c, s0, s1, s2, s3, s4):  # pragma: no cover - compiled
    """The window token as the ring stores it (step 3c). A ufunc: the same code in the loop and in numpy."""
    return (c | s0 << TOK_S0_SHIFT | s1 << TOK_S1_SHIFT | s2 << TOK_S2_SHIFT | s3 << TOK_S3_SHIFT
            | s4 << TOK_S4_SHIFT)


@numba.vectorize(["int64(int64, int64, int64, int64, int64)"], cache=True)
def sample_word(ip_len, iat_b, direction, fclass, pclass):  # pragma: no cover - compiled
    """A token sample as the sample buffer stores it (step 9)."""
    return (ip_len << SMP_LEN_SHIFT | iat_b << SMP_IAT_SHIFT | direction << SMP_DIR_SHIFT | fclass << SMP_FC_SHIFT
            | pclass << SMP_PC_SHIFT)


def unpack_sample(words: np.ndarray) -> dict[str, np.ndarray]:
    w = np.asarray(words, np.int64)
    return {"ip_len": w >> SMP_LEN_SHIFT & 0xFFFF, "iat_bucket": w >> SMP_IAT_SHIFT & 0xF,
            "direction": w >> SMP_DIR_SHIFT & 1, "flag_class": w >> SMP_FC_SHIFT & 0x7,
            "proto_class": w >> SMP_PC_SHIFT & 0x3}


# --------------------------------------------------------------------------- hashing (step 1)

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
    """(crc32 of the canonical 5-tuple, swap bit) for IPv4 packets (step 1: 13 bytes, big endian)."""
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
    return ((table.linktype == LINKTYPE_ETHERNET) & ~table.vlan & (table.ethertype == ETH_P_IPV4)
            & (table.ip_version == 4) & (table.status == ParseStatus.OK))


# --------------------------------------------------------------------------- the argument groups

class Packet(NamedTuple):
    """Per packet, in arrival order: step 0's parse result, step 1's hash, and the clock."""

    parsed: np.ndarray    # bool: step 0 accepted it
    crc: np.ndarray       # CRC-32 of the canonical 5-tuple
    swap: np.ndarray      # 1 when the canonical order swapped the endpoints
    now: np.ndarray       # the clock, ns (the trace's or the switch's: docs/pipeline.md, "Clocks")
    proto: np.ndarray
    tcp_flags: np.ndarray
    sport: np.ndarray
    dport: np.ndarray
    ip_len: np.ndarray


class Tables(NamedTuple):
    """One version of the installed tables, as the dataplane indexes them."""

    len_coarse: np.ndarray   # [65536] ip_len -> coarse bin (range table len_lo)
    len_fine: np.ndarray     # [65536] ip_len -> fine bin (range table len_fine_lo)
    flag_cls: np.ndarray     # [256] tcp_flags -> flag class (ternary table flag_ternary, first match)
    map_tbl: np.ndarray      # [MAP_KEYS] exact key -> centroid
    port_id: np.ndarray      # [65536] port -> id (exact table port_vocab, rank order; 0 = other)
    v_len: np.ndarray        # the five value tables [ids, D_V]
    v_iat: np.ndarray
    v_flags: np.ndarray
    v_port: np.ndarray
    v_index: np.ndarray
    phi_q: np.ndarray        # [C, m]
    phi_k: np.ndarray        # [C, m]
    kernel: np.ndarray       # [C, C] (the batch form)
    w_out: np.ndarray        # [D_V, Y]
    g: np.ndarray            # [C, PROTO_CLASSES, Y] global layer (first match resolved per (c, pc))
    gz: np.ndarray           # [C, PROTO_CLASSES]
    g_hit: np.ndarray        # [C, PROTO_CLASSES] bool
    hard_value: np.ndarray   # [H, RULE_KEY_LEN]
    hard_mask: np.ndarray
    hard_rule: np.ndarray    # [H]
    hard_label: np.ndarray   # [H]
    soft_value: np.ndarray   # [S, RULE_KEY_LEN]
    soft_mask: np.ndarray
    soft_rule: np.ndarray    # [S] the soft rule each entry belongs to
    soft_w: np.ndarray       # [R, Y]


class Params(NamedTuple):
    """The artifact's coefficients (int64 scalars)."""

    incremental: int   # AGG_INCREMENTAL
    use_window: int    # USE_WINDOW
    alpha: int
    beta: int
    gamma: int
    lambda_h: int
    ema_shift: int
    ema_shift2: int    # 0: a single-shift EMA step
    ema_frac: int
    sample_shift: int


class State(NamedTuple):
    """The registers (docs/pipeline.md, "State and versions"), mutated in place."""

    sig: np.ndarray        # [F] per flow slot
    pkts: np.ndarray
    last: np.ndarray       # 32-bit per-flow timestamp (units of 2^IAT_SHIFT ns)
    orient: np.ndarray
    head: np.ndarray
    ring: np.ndarray       # [F, WINDOW]
    s_acc: np.ndarray      # [F, m, D_V] (incremental)
    z_acc: np.ndarray      # [F, m]
    ema: np.ndarray        # [C] centroid occupancy
    class_ema: np.ndarray  # [Y]
    sample: np.ndarray     # [SAMPLE_SLOTS]
    sample_count: np.ndarray  # [1]
    counters: np.ndarray   # [4] COUNTER_NAMES
    clock: np.ndarray      # [1] the last `now` a parsed packet used
    coverage: np.ndarray   # [N_POINTS] decision points taken (chimera.formats.coverage)


class Out(NamedTuple):
    """Per packet: the verdict header's fields and the fused scores."""

    label: np.ndarray
    flags: np.ndarray
    score: np.ndarray
    rule_id: np.ndarray
    centroid: np.ndarray
    fused: np.ndarray      # [N, Y]


# --------------------------------------------------------------------------- steps 0-10, one packet

@numba.njit(cache=True)
def _bit_length(x):  # pragma: no cover - jitted
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@numba.njit(cache=True, inline="always")
def _ema_step(d, shift, shift2):  # pragma: no cover - jitted
    """The EMA increment for d = u - C (step 8): (d >> EMA_SHIFT) + (d >> EMA_SHIFT2), the second term only when
    EMA_SHIFT2 > 0."""
    return (d >> shift) + ((d >> shift2) if shift2 > 0 else 0)


@numba.njit(cache=True, inline="always")
def _token_value(tok, t, out):  # pragma: no cover - jitted
    """Step 3d: v(tok) = the five value-table rows of the token's sub-tokens, summed (SumReduce), into ``out``."""
    s0 = (tok >> TOK_S0_SHIFT) & TOK_S0_MASK
    s1 = (tok >> TOK_S1_SHIFT) & TOK_SUB_MASK
    s2 = (tok >> TOK_S2_SHIFT) & TOK_SUB_MASK
    s3 = (tok >> TOK_S3_SHIFT) & TOK_SUB_MASK
    s4 = (tok >> TOK_S4_SHIFT) & TOK_SUB_MASK
    for e in range(out.shape[0]):
        out[e] = t.v_len[s0, e] + t.v_iat[s1, e] + t.v_flags[s2, e] + t.v_port[s3, e] + t.v_index[s4, e]


@numba.njit(cache=True)
def _packet(i, p, t, prm, st, out, scratch):  # pragma: no cover - jitted
    """Steps 0-10 of docs/pipeline.md for packet i."""
    vin, vout, h, key, fired, S = scratch
    Y = t.w_out.shape[1]
    DV = t.w_out.shape[0]
    M = t.phi_q.shape[1]
    F = st.sig.shape[0]
    L = st.ring.shape[1]

    # 0. Parse: an unparsed packet is counted and touches no other state.
    if not p.parsed[i]:
        st.counters[CNT_UNPARSED] += 1
        st.coverage[COV_UNPARSED] += 1
        return
    st.coverage[COV_PARSED] += 1
    n_parsed = st.counters[CNT_PARSED]  # step 9 reads the value before this packet
    st.counters[CNT_PARSED] += 1
    now = p.now[i]
    st.clock[0] = now
    flags = 0

    # 1. Flow slot: slot = crc & (FLOW_SLOTS - 1); another flow's signature in a used slot is evicted.
    crc = p.crc[i]
    s = crc & (F - 1)
    if st.pkts[s] > 0 and st.sig[s] != crc:
        flags |= F_EVICTED
        st.counters[CNT_EVICTIONS] += 1
        st.coverage[COV_EVICT] += 1
        st.pkts[s] = 0

    # 2. Tokenize: a new flow resets the slot; otherwise the inter-arrival bucket from the 32-bit timestamp.
    tsu = (now >> IAT_SHIFT) & TS_UNIT_MASK
    if st.pkts[s] == 0:
        flags |= F_NEW_FLOW
        st.counters[CNT_NEW_FLOWS] += 1
        st.coverage[COV_NEW_FLOW] += 1
        st.sig[s] = crc
        st.orient[s] = p.swap[i]
        st.head[s] = 0
        if prm.incremental:
            st.s_acc[s, :, :] = 0
            st.z_acc[s, :] = 0
        iat = 0
    else:
        st.coverage[COV_SAME_FLOW] += 1
        if tsu < st.last[s]:
            st.coverage[COV_CLOCK_WRAP] += 1
        units = (tsu - st.last[s]) & TS_UNIT_MASK
        iat = 1 + min(_bit_length(units), IAT_BUCKETS - 2)
        if iat == IAT_BUCKETS - 1:
            st.coverage[COV_IAT_TOP] += 1
    d = p.swap[i] ^ st.orient[s]
    if d == 1:
        st.coverage[COV_REVERSE_DIR] += 1
    pkts_before = st.pkts[s]
    if pkts_before == PKTS_MAX:
        st.coverage[COV_PKTS_SATURATED] += 1
    npk = min(pkts_before + 1, PKTS_MAX)

    # 3. Partition and Map.
    #  a. the centroid, from the exact key of (coarse length bin, IAT bucket, direction, flag class, protocol class)
    lb = t.len_coarse[p.ip_len[i]]
    fc = t.flag_cls[p.tcp_flags[i]]
    proto = p.proto[i]
    pc = 1 if proto == 6 else 2 if proto == 17 else 3 if proto == 1 else 0
    st.coverage[COV_PROTO_OTHER if pc == 0 else COV_PROTO_TCP if pc == 1 else COV_PROTO_UDP if pc == 2
                else COV_PROTO_ICMP] += 1
    mkey = (((lb * IAT_BUCKETS + iat) * DIRS + d) * FLAG_CLASSES + fc) * PROTO_CLASSES + pc
    c = t.map_tbl[mkey]
    #  b. the value sub-tokens
    lf = t.len_fine[p.ip_len[i]]
    sid = t.port_id[p.sport[i]]
    did = t.port_id[p.dport[i]]
    pid = did if sid == 0 or (did != 0 and did < sid) else sid  # the higher-ranked port of the two
    if sid != 0 and did != 0:
        st.coverage[COV_PORT_BOTH] += 1
    st.coverage[COV_PORT_HIT if pid != 0 else COV_PORT_MISS] += 1
    s0 = lf * DIRS + d
    s1 = iat * DIRS + d
    s2 = fc * PROTO_CLASSES + pc
    s3 = pid * DIRS + d
    s4 = min(_bit_length(npk), IDX_BUCKETS - 1)
    #  c. the token, as the ring stores it
    tok = pack_token(c, s0, s1, s2, s3, s4)

    # 4. Window (incremental attention): the token leaving the ring out of S/Zacc, the new one in.
    if pkts_before >= L:
        st.coverage[COV_WINDOW_FULL] += 1
    if prm.incremental:
        if pkts_before >= L:
            old = st.ring[s, st.head[s]]
            c_old = old & TOK_C_MASK
            _token_value(old, t, vout)  # 3d, with the current value tables
            for j in range(M):
                st.z_acc[s, j] -= t.phi_k[c_old, j]
                for e in range(DV):
                    st.s_acc[s, j, e] -= t.phi_k[c_old, j] * vout[e]
        _token_value(tok, t, vin)
        for j in range(M):
            st.z_acc[s, j] += t.phi_k[c, j]
            for e in range(DV):
                st.s_acc[s, j, e] += t.phi_k[c, j] * vin[e]
    st.ring[s, st.head[s]] = tok
    st.head[s] = (st.head[s] + 1) & (L - 1)
    st.pkts[s] = npk
    st.last[s] = tsu

    # 5. Attention, division-free: A_y and Z from the window; then the global layer's first match.
    A = out.fused[i]  # A_y accumulates here, then step 7 turns it into fused_y in place
    A[:] = 0
    Z = 0
    if prm.use_window:
        if prm.incremental:
            for e in range(DV):
                acc = 0
                for j in range(M):
                    acc += t.phi_q[c, j] * st.s_acc[s, j, e]
                h[e] = acc
            for y in range(Y):
                acc = 0
                for e in range(DV):
                    acc += t.w_out[e, y] * h[e]
                A[y] = acc
            for j in range(M):
                Z += t.phi_q[c, j] * st.z_acc[s, j]
        else:  # the batch form: re-sum the first min(npk, WINDOW) ring entries with the kernel table
            for k in range(min(npk, L)):
                tk = st.ring[s, k]
                kk = t.kernel[c, tk & TOK_C_MASK]
                _token_value(tk, t, vout)
                Z += kk
                for y in range(Y):
                    u = 0
                    for e in range(DV):
                        u += t.w_out[e, y] * vout[e]
                    A[y] += kk * u
    if t.g_hit[c, pc]:
        flags |= F_GLOBAL_HIT
        st.coverage[COV_GLOBAL_HIT] += 1
        Z += t.gz[c, pc]
        for y in range(Y):
            A[y] += t.g[c, pc, y]
    else:
        st.coverage[COV_GLOBAL_MISS] += 1

    # 6. Rules, on the key (proto, tcp_flags, dir, min(npk, 255), sport, dport, ip_len).
    key[0] = proto
    key[1] = p.tcp_flags[i]
    key[2] = d
    key[3] = min(npk, FLOW_PKTS_SATURATION)
    key[4] = p.sport[i]
    key[5] = p.dport[i]
    key[6] = p.ip_len[i]
    hard = -1  # the first matching hard entry
    for r in range(t.hard_rule.shape[0]):
        if matches(key, t.hard_value, t.hard_mask, r):
            hard = r
            break
    fired[:] = False  # soft rule r fires if any of its entries matches
    for r in range(t.soft_rule.shape[0]):
        if not fired[t.soft_rule[r]] and matches(key, t.soft_value, t.soft_mask, r):
            fired[t.soft_rule[r]] = True
    st.coverage[COV_HARD_HIT if hard >= 0 else COV_HARD_MISS] += 1
    S[:] = 0
    any_fired = False
    for r in range(fired.shape[0]):
        if fired[r]:
            any_fired = True
            for y in range(Y):
                S[y] += t.soft_w[r, y]
    st.coverage[COV_SOFT_FIRED if any_fired else COV_SOFT_NONE] += 1

    # 7. Fusion with the class EMA as it is before this packet; first argmax; margin; the hard veto.
    best = 0
    for y in range(Y):
        A[y] = prm.alpha * A[y] + prm.beta * S[y] * Z + ((prm.gamma * st.class_ema[y] * Z) >> prm.ema_frac)
        if A[y] > A[best]:
            best = y
    second = A[best]
    have = False
    for y in range(Y):
        if y != best and (not have or A[y] > second):
            second = A[y]
            have = True
    if prm.gamma != 0:
        st.coverage[COV_PRIOR] += 1
    if have and A[best] == second:
        st.coverage[COV_TIE] += 1
    if A[best] - second > SCORE_MAX:
        st.coverage[COV_MARGIN_CLAMP] += 1
    label = best
    score = min(A[best] - second, SCORE_MAX)
    rule_id = NO_RULE
    if hard >= 0:
        rule_id = t.hard_rule[hard]
        if prm.lambda_h == 1:
            label = t.hard_label[hard]
            score = SCORE_MAX
            flags |= F_HARD_VETO
            st.coverage[COV_VETO] += 1
        else:
            st.coverage[COV_NO_VETO] += 1

    # 8. Statistics (two timescales): centroid occupancy, then the class EMA.
    one = np.int64(1) << prm.ema_frac
    for j in range(st.ema.shape[0]):
        u = one if j == c else 0
        step = _ema_step(u - st.ema[j], prm.ema_shift, prm.ema_shift2)
        if j == c and step == 0 and st.ema[j] != one:
            st.coverage[COV_EMA_STALL] += 1
        st.ema[j] += step
    for y in range(Y):
        u = one if y == label else 0
        st.class_ema[y] += _ema_step(u - st.class_ema[y], prm.ema_shift, prm.ema_shift2)

    # 9. Token sample, when the parsed counter before this packet has its low SAMPLE_SHIFT bits zero.
    if (n_parsed & ((np.int64(1) << prm.sample_shift) - 1)) == 0:
        st.coverage[COV_SAMPLE] += 1
        if st.sample_count[0] >= st.sample.shape[0]:
            st.coverage[COV_SAMPLE_WRAP] += 1
        st.sample[st.sample_count[0] & (st.sample.shape[0] - 1)] = sample_word(p.ip_len[i], iat, d, fc, pc)
        st.sample_count[0] += 1

    # 10. Emit: the verdict header's fields (the map version is the caller's: the tables' version).
    out.label[i] = label
    out.flags[i] = flags
    out.score[i] = score
    out.rule_id[i] = rule_id
    out.centroid[i] = c


@numba.njit(cache=True)
def _pipeline(p, t, prm, st, out):  # pragma: no cover - jitted
    """Every packet, in arrival order."""
    DV = t.w_out.shape[0]
    scratch = (np.zeros(DV, np.int64), np.zeros(DV, np.int64), np.zeros(DV, np.int64),
               np.zeros(RULE_KEY_LEN, np.int64), np.zeros(t.soft_w.shape[0], np.bool_),
               np.zeros(t.w_out.shape[1], np.int64))
    for i in range(p.parsed.shape[0]):
        _packet(i, p, t, prm, st, out, scratch)


# --------------------------------------------------------------------------- state and verdicts

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
    counters: np.ndarray = field(init=False)  # COUNTER_NAMES
    clock: np.ndarray = field(init=False)     # [1] the last `now` a parsed packet used
    coverage: np.ndarray = field(init=False)  # [N_POINTS] chimera.formats.coverage

    def __post_init__(self) -> None:
        F, L = self.flow_slots, self.window
        n = F if self.incremental else 1
        for name in ("sig", "pkts", "last", "orient", "head"):
            setattr(self, name, np.zeros(F, np.int64))
        self.ring = np.zeros((F, L), np.int64)
        self.s_acc = np.zeros((n, self.features, self.d_v), np.int64)
        self.z_acc = np.zeros((n, self.features), np.int64)
        self.ema = np.zeros(self.n_centroids, np.int64)
        self.class_ema = np.zeros(self.n_classes, np.int64)
        self.sample = np.zeros(self.sample_slots, np.int64)
        self.sample_count = np.zeros(1, np.int64)
        self.counters = np.zeros(len(COUNTER_NAMES), np.int64)
        self.clock = np.zeros(1, np.int64)
        self.coverage = np.zeros(cov.N_POINTS, np.int64)

    @property
    def regs(self) -> State:
        """The registers as the loop takes them (the same arrays: the loop updates them in place)."""
        return State(*(getattr(self, f) for f in State._fields))

    def registers(self) -> Registers:
        """The registers a control plane reads, shaped as the switches' ``registers()`` return them."""
        return {"ema": self.ema.copy(), "class_ema": self.class_ema.copy(), "sample": self.sample.copy(),
                "sample_count": int(self.sample_count[0]), "clock": int(self.clock[0]),
                "counters": dict(zip(COUNTER_NAMES, self.counters.tolist())), "coverage": self.coverage.copy()}

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


# --------------------------------------------------------------------------- tables as the loop reads them

def global_dense(art: Artifact) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The global ternary table resolved for every (centroid, protocol class): first match wins."""
    C, Y = art.c("NUM_CENTROIDS"), art.c("NUM_CLASSES")
    gt = art.global_table
    cc, pp = np.meshgrid(np.arange(C), np.arange(PROTO_CLASSES), indexing="ij")
    values, masks = gt.keys
    idx = first_match(np.column_stack([cc.ravel(), pp.ravel()]), values, masks).reshape(C, PROTO_CLASSES)
    hit = idx >= 0
    if len(gt) == 0:
        return np.zeros((C, PROTO_CLASSES, Y), np.int64), np.zeros((C, PROTO_CLASSES), np.int64), hit
    k = np.maximum(idx, 0)
    g = np.where(hit[..., None], gt.g[k], 0).astype(np.int64)
    gz = np.where(hit, gt.gz[k], 0).astype(np.int64)
    return g, gz, hit


def tables_of(art: Artifact) -> Tables:
    """One version of the artifact's tables, as the dataplane indexes them (see Tables)."""
    c64 = np.ascontiguousarray
    ports = np.zeros(65536, np.int64)
    ports[art.port_vocab] = np.arange(1, art.port_vocab.size + 1)
    lens = np.arange(65536)
    g, gz, hit = global_dense(art)
    hard, soft = art.hard_rules, art.soft_rules
    label = hard.label if hard.label is not None else np.zeros(0, np.int64)
    soft_w = art.soft_weights.reshape(-1, art.c("NUM_CLASSES"))
    return Tables(len_bin(lens, art.len_lo), len_bin(lens, art.len_fine_lo),
                  flag_class(np.arange(256), art.flag_ternary).astype(np.int64), art.map.astype(np.int64), ports,
                  c64(art.val_len, np.int64), c64(art.val_iat, np.int64), c64(art.val_flags, np.int64),
                  c64(art.val_port, np.int64), c64(art.val_index, np.int64), c64(art.phi_q, np.int64), c64(art.phi_k, np.int64),
                  c64(art.kernel, np.int64), c64(art.w_out, np.int64), g, gz, hit,
                  c64(hard.value.reshape(-1, RULE_KEY_LEN)), c64(hard.mask.reshape(-1, RULE_KEY_LEN)), c64(hard.rule),
                  c64(label), c64(soft.value.reshape(-1, RULE_KEY_LEN)), c64(soft.mask.reshape(-1, RULE_KEY_LEN)),
                  c64(soft.rule), c64(soft_w, np.int64))


def params_of(art: Artifact) -> Params:
    return Params(int(art.c("AGG_INCREMENTAL") == 1), int(art.c("USE_WINDOW") == 1), art.c("ALPHA"), art.c("BETA"),
                  art.c("GAMMA"), art.c("LAMBDA_H"), art.c("EMA_SHIFT"), ema_shift2(art), art.c("EMA_FRAC"),
                  art.c("SAMPLE_SHIFT"))


def ema_shift2(art: Artifact) -> int:
    """EMA_SHIFT2 (0: a single-shift step)."""
    return int(art.constants.get("EMA_SHIFT2", 0))


def packets_of(table: PacketTable, ts_ns: np.ndarray) -> Packet:
    crc, swap = flow_hash(table.src4, table.dst4, table.sport, table.dport, table.proto)
    i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
    return Packet(dataplane_parsed(table), i64(crc), i64(swap), i64(ts_ns), i64(table.proto), i64(table.tcp_flags),
                  i64(table.sport), i64(table.dport), i64(table.ip_len))


# --------------------------------------------------------------------------- pipeline

def run_reference(art: Artifact, table: PacketTable, ts_ns: np.ndarray | None = None,
                  state: SwitchState | None = None) -> tuple[Verdicts, SwitchState]:
    """Verdict of every packet of ``table`` (in row order) on the clock ``ts_ns`` (default: the capture's own
    timestamps); ``state`` continues a run (its registers are updated in place)."""
    n = len(table)
    ts = table.ts_ns if ts_ns is None else np.asarray(ts_ns, np.int64)
    st = state if state is not None else SwitchState.for_artifact(art)
    Y = art.c("NUM_CLASSES")
    out = Out(np.full(n, NO_LABEL, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, NO_RULE, np.int64),
              np.zeros(n, np.int64), np.zeros((n, Y), np.int64))
    p = packets_of(table, ts)
    _pipeline(p, tables_of(art), params_of(art), st.regs, out)
    parsed = p.parsed
    v = Verdicts(label=out.label.astype(np.uint8), flags=np.where(parsed, out.flags, int(VerdictFlag.UNPARSED)).astype(np.uint8),
                 score=out.score.astype(np.uint32), rule_id=out.rule_id.astype(np.uint8), centroid=out.centroid.astype(np.uint8),
                 map_version=np.full(n, art.c("MAP_VERSION"), np.uint16), fused=out.fused)
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
            v, st = run_reference(art, table.take(slice(a, b)), ts_ns=ts[a:b], state=st)
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
