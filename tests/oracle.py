"""A straightforward per-packet re-implementation of the pipeline semantics, for property tests.

Written independently of chimera.reference.pipeline: Python ints, dicts,
zlib.crc32 and explicit loops, following the prose of docs/pipeline.md. It is slow on purpose and shares no code with
the implementation under test except the artifact it reads.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

SCORE_MAX = 0xFFFFFFFF


@dataclass
class Slot:
    sig: int = 0
    pkts: int = 0
    last: int = 0
    orient: int = 0
    head: int = 0
    ring: list[int] = field(default_factory=list)
    s: list[list[int]] | None = None
    z: list[int] | None = None


def _ternary(key: list[int], value: list[int], mask: list[int]) -> bool:
    return all((k & m) == v for k, v, m in zip(key, value, mask))


def oracle(art, pkts: list[dict]) -> tuple[list[tuple], list[int], int]:
    """Returns (verdict tuples (label, flags, score, rule, centroid), EMA registers, evictions)."""
    C = art.constants
    F, L, Y, NC = C["FLOW_SLOTS"], C["WINDOW"], C["NUM_CLASSES"], C["NUM_CENTROIDS"]
    inc = art.incremental
    slots: dict[int, Slot] = {}
    ema = [0] * NC
    evictions = 0
    out = []
    for p in pkts:
        if not p["parsed"]:
            out.append((0xFF, 0x02, 0, 0xFF, 0))
            continue
        flags = 0
        a = (p["src"], p["sport"])
        b = (p["dst"], p["dport"])
        swap = 1 if a > b else 0
        lo, hi = (b, a) if swap else (a, b)
        crc = zlib.crc32(struct.pack("!IIHHB", lo[0], hi[0], lo[1], hi[1], p["proto"]))
        idx = crc % F
        sl = slots.setdefault(idx, Slot(ring=[0] * L))
        if sl.pkts > 0 and sl.sig != crc:
            flags |= 0x04
            evictions += 1
            sl.pkts = 0
        tsu = (p["ts"] >> 10) % 2**32
        if sl.pkts == 0:
            flags |= 0x08
            sl.sig, sl.orient, sl.head, iat_b = crc, swap, 0, 0
            if inc is not None:
                m, dv = len(inc["phi_q"][0]), len(inc["values"][0])
                sl.s = [[0] * dv for _ in range(m)]
                sl.z = [0] * m
        else:
            iat_b = 1 + min(((tsu - sl.last) % 2**32).bit_length(), 14)
        d = swap ^ sl.orient
        lbin = max(i for i, lo_ in enumerate(art.len_lo.tolist()) if p["ip_len"] >= lo_)
        fcls = next(int(c) for v, m, c in art.flag_ternary.tolist() if (p["flags"] & m) == v)
        pcls = {6: 1, 17: 2, 1: 3}.get(p["proto"], 0)
        key = (((lbin * 16 + iat_b) * 2 + d) * 8 + fcls) * 4 + pcls
        c = int(art.map[key])
        if inc is not None and sl.pkts >= L:
            old = sl.ring[sl.head]
            for j in range(len(sl.z)):
                sl.z[j] -= int(inc["phi_k"][old][j])
                for e in range(len(sl.s[0])):
                    sl.s[j][e] -= int(inc["phi_k"][old][j]) * int(inc["values"][old][e])
        if inc is not None:
            for j in range(len(sl.z)):
                sl.z[j] += int(inc["phi_k"][c][j])
                for e in range(len(sl.s[0])):
                    sl.s[j][e] += int(inc["phi_k"][c][j]) * int(inc["values"][c][e])
        sl.ring[sl.head] = c
        sl.head = (sl.head + 1) % L
        sl.pkts = min(sl.pkts + 1, 0xFFFF)
        sl.last = tsu
        window = sl.ring[: min(sl.pkts, L)]
        A = [0] * Y
        Z = 0
        if C["USE_WINDOW"]:
            if inc is None:
                for ci in window:
                    Z += int(art.window_k[c][ci])
                    for y in range(Y):
                        A[y] += int(art.window_p[c][ci][y])
            else:
                # the same quantity, summed over the window contents (no accumulators)
                for ci in window:
                    k = sum(int(inc["phi_q"][c][j]) * int(inc["phi_k"][ci][j]) for j in range(len(sl.z)))
                    Z += k
                    for y in range(Y):
                        A[y] += k * sum(int(inc["values"][ci][e]) * int(inc["w_out"][e][y])
                                        for e in range(len(sl.s[0])))
        for row in art.global_entries.tolist():
            if (c & row[1]) == (row[0] & row[1]) and (pcls & row[3]) == (row[2] & row[3]):
                flags |= 0x10
                for y in range(Y):
                    A[y] += row[4 + y]
                Z += row[4 + Y]
                break
        key7 = [p["proto"], p["flags"], d, min(sl.pkts, 255), p["sport"], p["dport"], p["ip_len"]]
        hard = next((row for row in art.hard.tolist() if _ternary(key7, row[:7], row[7:14])), None)
        S = [0] * Y
        for r in range(C["SOFT_RULES"]):
            if any(_ternary(key7, row[:7], row[7:14]) for row in art.soft_entries.tolist() if row[14] == r):
                for y in range(Y):
                    S[y] += int(art.soft_weights[r][y])
        fused = [C["ALPHA"] * A[y] + C["BETA"] * S[y] * Z for y in range(Y)]
        best = max(range(Y), key=lambda y: (fused[y], -y))
        srt = sorted(fused)
        score = min(srt[-1] - srt[-2], SCORE_MAX)
        label, rule = best, 0xFF
        if hard is not None:
            rule = hard[14]
            if C["LAMBDA_H"]:
                label, score, flags = hard[15], SCORE_MAX, flags | 0x01
        for j in range(NC):
            u = (1 << C["EMA_FRAC"]) if j == c else 0
            ema[j] += (u - ema[j]) >> C["EMA_SHIFT"]
        out.append((label, flags, score, rule, c))
    return out, ema, evictions
