"""A straightforward per-packet re-implementation of docs/pipeline.md: the independent oracle.

Written independently of chimera.reference.pipeline (import-linter forbids it any import of the reference, the
dataplanes or the compiler): Python ints, dicts, zlib.crc32 and explicit loops, following the prose of
docs/pipeline.md. It is plain rather than fast and shares nothing with the implementations under test except
the artifact it reads; two things only are done once instead of per packet, neither changing a sum: the tables are
read into lists at ``install``, and a token's projection onto the output weights is remembered until the next one. The window is always re-summed from the ring (the batch form), so it also checks that the
reference's incremental accumulators equal it. ``Oracle.install`` changes the Map tables between two packets
and keeps the state, as a switch's version flip does.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from chimera.formats.artifact import Artifact

SCORE_MAX = 0xFFFFFFFF
UNPARSED = (0xFF, 0x02, 0, 0xFF, 0)
#: the header parse the dataplane accepts (step 0), read from the spec: untagged Ethernet, IPv4, no error
LINKTYPE_ETHERNET, ETHERTYPE_IPV4 = 1, 0x0800


@dataclass
class Slot:
    sig: int = 0
    pkts: int = 0
    last: int = 0
    orient: int = 0
    head: int = 0
    ring: list[int] = field(default_factory=list)


def _ternary(key: list[int], value: list[int], mask: list[int]) -> bool:
    return all((k & m) == (v & m) for k, v, m in zip(key, value, mask))


def _bin(lo: list[int], x: int) -> int:
    return max(i for i, b in enumerate(lo) if x >= b)


class Oracle:
    """The pipeline, one packet at a time; the state carries across ``install``s."""

    def __init__(self, art: Artifact) -> None:
        C = art.constants
        self.C = C
        self.F, self.L, self.Y, self.NC = C["FLOW_SLOTS"], C["WINDOW"], C["NUM_CLASSES"], C["NUM_CENTROIDS"]
        self.slots: dict[int, Slot] = {}
        self.ema, self.cema = [0] * self.NC, [0] * self.Y
        self.sample = [0] * C["SAMPLE_SLOTS"]
        self.n_samples = self.parsed_count = self.evictions = self.unparsed = self.new_flows = 0
        self.clock = 0
        self.install(art)

    def install(self, art: Artifact) -> None:
        """Make ``art``'s tables active (a live Map update: the registers stay)."""
        self.art = art
        self.version = int(art.constants["MAP_VERSION"])
        self.vals = [t.tolist() for t in art.values]
        self.K = art.kernel.tolist()
        self.W = art.w_out.tolist()
        self.ports = {int(p): i + 1 for i, p in enumerate(art.port_vocab.tolist())}
        self.len_lo, self.fine_lo = art.len_lo.tolist(), art.len_fine_lo.tolist()
        self.flag_rows = art.flag_ternary.tolist()
        self.map = art.map.tolist()
        # the tables as Python lists, read once per install rather than once per packet (the same entries, in order)
        gt, hr, sr = art.global_table, art.hard_rules, art.soft_rules
        self.global_rows = [(int(gt.c_value[e]), int(gt.c_mask[e]), int(gt.pc_value[e]), int(gt.pc_mask[e]),
                             [int(x) for x in gt.g[e]], int(gt.gz[e])) for e in range(len(gt))]
        self.hard_rows = [(hr.value[e].tolist(), hr.mask[e].tolist()) for e in range(len(hr))]
        self.soft_rows = [[(sr.value[e].tolist(), sr.mask[e].tolist()) for e in range(len(sr)) if sr.rule[e] == r]
                          for r in range(self.C["SOFT_RULES"])]
        self._proj: dict[int, list[int]] = {}  # token -> sum_e W[e][y] * v[e], as computed below, remembered

    def _value(self, tok: int) -> list[int]:
        s = [(tok >> 8) & 0xFFFF, (tok >> 24) & 0xFF, (tok >> 32) & 0xFF, (tok >> 40) & 0xFF, (tok >> 48) & 0xFF]
        return [sum(self.vals[t][s[t]][e] for t in range(5)) for e in range(self.C["D_V"])]

    def step(self, p: dict[str, Any]) -> tuple[int, int, int, int, int]:
        """The verdict (label, flags, score, rule, centroid) of one packet given as a dict (``rows_of``)."""
        C, art = self.C, self.art
        F, L, Y, NC = self.F, self.L, self.Y, self.NC
        if not p["parsed"]:
            self.unparsed += 1
            return UNPARSED
        take = self.parsed_count % (1 << C["SAMPLE_SHIFT"]) == 0
        self.parsed_count += 1
        self.clock = p["ts"]
        flags = 0
        a, b = (p["src"], p["sport"]), (p["dst"], p["dport"])
        swap = 1 if a > b else 0
        lo, hi = (b, a) if swap else (a, b)
        crc = zlib.crc32(struct.pack("!IIHHB", lo[0], hi[0], lo[1], hi[1], p["proto"]))
        sl = self.slots.setdefault(crc % F, Slot(ring=[0] * L))
        if sl.pkts > 0 and sl.sig != crc:
            flags |= 0x04
            self.evictions += 1
            sl.pkts = 0
        tsu = (p["ts"] >> 10) % 2**32
        if sl.pkts == 0:
            flags |= 0x08
            self.new_flows += 1
            sl.sig, sl.orient, sl.head, iat = crc, swap, 0, 0
        else:
            iat = 1 + min(((tsu - sl.last) % 2**32).bit_length(), 14)
        d = swap ^ sl.orient
        npk = min(sl.pkts + 1, 65535)
        fc = next(int(c) for v, m, c in self.flag_rows if (p["flags"] & m) == (v & m))
        pc = {6: 1, 17: 2, 1: 3}.get(p["proto"], 0)
        c = int(self.map[(((_bin(self.len_lo, p["ip_len"]) * 16 + iat) * 2 + d) * 8 + fc) * 4 + pc])
        sid, did = self.ports.get(p["sport"], 0), self.ports.get(p["dport"], 0)
        pid = did if sid == 0 or (did != 0 and did < sid) else sid
        tok = (c | (_bin(self.fine_lo, p["ip_len"]) * 2 + d) << 8 | (iat * 2 + d) << 24
               | (fc * 4 + pc) << 32 | (pid * 2 + d) << 40 | min(npk.bit_length(), 15) << 48)
        sl.ring[sl.head] = tok
        sl.head = (sl.head + 1) % L
        sl.pkts = npk
        sl.last = tsu
        A, Z = [0] * Y, 0
        if C["USE_WINDOW"]:
            for t in sl.ring[: min(npk, L)]:
                k = self.K[c][t & 0xFF]
                proj = self._proj.get(t)
                if proj is None:
                    v = self._value(t)
                    proj = self._proj[t] = [sum(self.W[e][y] * v[e] for e in range(C["D_V"])) for y in range(Y)]
                Z += k
                for y in range(Y):
                    A[y] += k * proj[y]
        for cv, cm, pv, pm, g, gz in self.global_rows:
            if (c & cm) == (cv & cm) and (pc & pm) == (pv & pm):
                flags |= 0x10
                A = [A[y] + g[y] for y in range(Y)]
                Z += gz
                break
        key7 = [p["proto"], p["flags"], d, min(npk, 255), p["sport"], p["dport"], p["ip_len"]]
        hr = art.hard_rules
        hard = next((e for e, (v7, m7) in enumerate(self.hard_rows) if _ternary(key7, v7, m7)), None)
        S = [0] * Y
        for r, entries in enumerate(self.soft_rows):
            if any(_ternary(key7, v7, m7) for v7, m7 in entries):
                S = [S[y] + int(art.soft_weights[r][y]) for y in range(Y)]
        fused = [C["ALPHA"] * A[y] + C["BETA"] * S[y] * Z + ((C["GAMMA"] * self.cema[y] * Z) >> C["EMA_FRAC"])
                 for y in range(Y)]
        best = max(range(Y), key=lambda y: (fused[y], -y))
        srt = sorted(fused)
        score = min(srt[-1] - srt[-2], SCORE_MAX) if Y > 1 else 0
        label, rule = best, 0xFF
        if hard is not None:
            rule = int(hr.rule[hard])
            if C["LAMBDA_H"]:
                assert hr.label is not None  # hard rules carry their label
                label, score, flags = int(hr.label[hard]), SCORE_MAX, flags | 0x01

        def ema_step(d: int) -> int:  # eta = 2^-EMA_SHIFT (+ 2^-EMA_SHIFT2 when EMA_SHIFT2 > 0)
            s2 = C.get("EMA_SHIFT2", 0)
            return (d >> C["EMA_SHIFT"]) + ((d >> s2) if s2 else 0)
        for j in range(NC):
            self.ema[j] += ema_step(((1 << C["EMA_FRAC"]) if j == c else 0) - self.ema[j])
        for y in range(Y):
            self.cema[y] += ema_step(((1 << C["EMA_FRAC"]) if y == label else 0) - self.cema[y])
        if take:
            self.sample[self.n_samples % len(self.sample)] = p["ip_len"] << 16 | iat << 12 | d << 11 | fc << 8 | pc << 6
            self.n_samples += 1
        return label, flags, score, rule, c

    def registers(self) -> dict[str, Any]:
        """The registers in the shape the targets' ``registers()`` give them."""
        return {"ema": list(self.ema), "class_ema": list(self.cema), "sample": list(self.sample),
                "sample_count": self.n_samples, "clock": self.clock,
                "counters": {"evictions": self.evictions, "new_flows": self.new_flows,
                             "parsed": self.parsed_count, "unparsed": self.unparsed}}


def oracle(art: Artifact, pkts: list[dict[str, Any]]) -> tuple[list[tuple[int, int, int, int, int]], dict[str, Any]]:
    """(verdict tuples (label, flags, score, rule, centroid), final registers) for packets given as dicts."""
    o = Oracle(art)
    out = [o.step(p) for p in pkts]
    regs = o.registers()
    return out, {"ema": regs["ema"], "class_ema": regs["class_ema"], "evictions": o.evictions,
                 "sample": regs["sample"], "samples": o.n_samples}


def rows_of(table: Any, ts_ns: Any = None) -> list[dict[str, Any]]:
    """A packet table as the oracle's packet dicts. Step 0 is read from the spec here, not from the reference:
    untagged Ethernet, EtherType 0x0800, IPv4, parsed without error (the table's status)."""
    ts = table.ts_ns if ts_ns is None else ts_ns
    return [{"parsed": bool(lt == LINKTYPE_ETHERNET and not vl and et == ETHERTYPE_IPV4 and v == 4 and s == 0),
             "src": int(a), "dst": int(b), "sport": int(sp), "dport": int(dp), "proto": int(pr), "flags": int(fl),
             "ip_len": int(il), "ts": int(t)}
            for lt, vl, et, v, s, a, b, sp, dp, pr, fl, il, t in zip(
                table.linktype.tolist(), table.vlan.tolist(), table.ethertype.tolist(), table.ip_version.tolist(),
                table.status.tolist(), table.src4.tolist(), table.dst4.tolist(), table.sport.tolist(),
                table.dport.tolist(), table.proto.tolist(), table.tcp_flags.tolist(), table.ip_len.tolist(),
                list(ts))]
