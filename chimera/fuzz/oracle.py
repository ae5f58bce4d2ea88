"""A straightforward per-packet re-implementation of docs/pipeline.md: the independent oracle.

Written independently of chimera.reference.pipeline (import-linter forbids it any import of the reference, the
dataplanes or the compiler): Python ints, dicts, zlib.crc32 and explicit loops, following the prose of
docs/pipeline.md. It is plain rather than fast and shares nothing with the implementations under test except
the artifact it reads. What is done once instead of per packet changes no sum and no match, and lasts until the
next ``install``: the tables are read into lists; each ternary row's seven fields are packed into one integer
(``_pack``), so a row is matched with one ``&`` and ``==``; a token's projection onto the output weights, a
length's bin, the global layer's first match for a (centroid, protocol class) and the rules' matches for a rule
key are remembered once computed.
The window is always re-summed from the ring (the batch form), so it also checks that the reference's
incremental accumulators equal it. ``Oracle.install`` changes the Map tables between two packets
and keeps the state, as a switch's version flip does.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, TypedDict

from chimera.formats.artifact import Artifact
from chimera.formats.registers import Registers

SCORE_MAX = 0xFFFFFFFF
UNPARSED = (0xFF, 0x02, 0, 0xFF, 0)
#: the header parse the dataplane accepts (step 0), read from the spec: untagged Ethernet, IPv4, no error
LINKTYPE_ETHERNET, ETHERTYPE_IPV4 = 1, 0x0800


class Packet(TypedDict):
    """One packet as the oracle reads it (``rows_of``): the fields the pipeline's parser extracts."""
    parsed: bool
    src: int
    dst: int
    sport: int
    dport: int
    proto: int
    flags: int
    ip_len: int
    ts: int


class FinalState(TypedDict):
    """The oracle's state after the last packet, as the tests compare it with the reference's."""
    ema: list[int]
    class_ema: list[int]
    evictions: int
    sample: list[int]
    samples: int


@dataclass
class Slot:
    sig: int = 0
    pkts: int = 0
    last: int = 0
    orient: int = 0
    head: int = 0
    ring: list[int] = field(default_factory=list)


#: bits per field in a packed ternary key: every key field (protocol, TCP flags, direction, packets capped at 255,
#: ports, IP length) is below 2^16, so 32 bits hold it with room
_FIELD = 32
_FIELD_MASK = (1 << _FIELD) - 1
#: the rule key's fields, as step 6 of the spec lists them; a row's columns past them, if any, are not compared
#: (as zipping the key with the row never compared them)
_KEY_LEN = 7


def _pack(fields: list[int]) -> int:
    return sum(x << (_FIELD * i) for i, x in enumerate(fields))


def _packed_row(value: list[int], mask: list[int]) -> tuple[int, int] | None:
    """A ternary row as (value & mask, mask), packed, with ``key & mask == value & mask`` meaning the same for
    any key whose fields are in [0, 2^32): a field's ``k & m`` is then ``k & (m & 0xFFFFFFFF)``, and a row
    whose ``v & m`` falls outside [0, 2^32) for some field (a negative or wider entry) can match no key (None)."""
    value, mask = value[:_KEY_LEN], mask[:_KEY_LEN]
    vm = [v & m for v, m in zip(value, mask)]
    if any(not 0 <= x <= _FIELD_MASK for x in vm):
        return None
    return _pack(vm), _pack([m & _FIELD_MASK for m in mask])


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
        self.hard_rows = [_packed_row(hr.value[e].tolist(), hr.mask[e].tolist()) for e in range(len(hr))]
        self.hard_rule = hr.rule.tolist()
        self.hard_label = None if hr.label is None else hr.label.tolist()
        self.soft_weights = art.soft_weights.tolist()  # int64 [R, Y]: Python ints
        self.soft_rows = [[r for r in (_packed_row(sr.value[e].tolist(), sr.mask[e].tolist())
                                       for e in range(len(sr)) if sr.rule[e] == rule) if r is not None]
                          for rule in range(self.C["SOFT_RULES"])]
        self._proj: dict[int, list[int]] = {}  # token -> sum_e W[e][y] * v[e], as computed below, remembered
        self._bins: dict[tuple[int, int], int] = {}  # (0 coarse / 1 fine, IP length) -> its bin
        self._global: dict[tuple[int, int], int] = {}  # (c, pc) -> index of the first matching global row, or -1
        self._rule_hits: dict[int, tuple[int | None, list[int]]] = {}  # packed rule key -> (hard entry, soft sums)

    def _len_bin(self, fine: int, ip_len: int) -> int:
        b = self._bins.get((fine, ip_len))
        if b is None:
            b = self._bins[(fine, ip_len)] = _bin(self.fine_lo if fine else self.len_lo, ip_len)
        return b

    def _global_row(self, c: int, pc: int) -> int:
        e = self._global.get((c, pc))
        if e is None:
            e = self._global[(c, pc)] = next((e for e, (cv, cm, pv, pm, _, _) in enumerate(self.global_rows)
                                              if (c & cm) == (cv & cm) and (pc & pm) == (pv & pm)), -1)
        return e

    def _rules(self, key: int) -> tuple[int | None, list[int]]:
        """(the first matching hard rule's entry or None, the summed weights of the soft rules that match) for a
        packed rule key; remembered per key."""
        got = self._rule_hits.get(key)
        if got is None:
            hard = next((e for e, row in enumerate(self.hard_rows) if row is not None and key & row[1] == row[0]),
                        None)
            S = [0] * self.Y
            for r, entries in enumerate(self.soft_rows):
                if any(key & m == vm for vm, m in entries):
                    S = [S[y] + self.soft_weights[r][y] for y in range(self.Y)]
            got = self._rule_hits[key] = (hard, S)
        return got

    def _ema(self, ema: list[int], hot: int) -> list[int]:
        """Every entry moved toward 1.0 (``hot``) or 0 (the others) by eta = 2^-EMA_SHIFT (+ 2^-EMA_SHIFT2 when
        EMA_SHIFT2 > 0): e += (u - e) >> s1 (+ (u - e) >> s2), arithmetic shifts."""
        C = self.C
        s1, s2, one = C["EMA_SHIFT"], C.get("EMA_SHIFT2", 0), 1 << C["EMA_FRAC"]
        step = [(one if j == hot else 0) - e for j, e in enumerate(ema)]
        return [e + (d >> s1) + ((d >> s2) if s2 else 0) for e, d in zip(ema, step)]

    def _value(self, tok: int) -> list[int]:
        s = [(tok >> 8) & 0xFFFF, (tok >> 24) & 0xFF, (tok >> 32) & 0xFF, (tok >> 40) & 0xFF, (tok >> 48) & 0xFF]
        return [sum(self.vals[t][s[t]][e] for t in range(5)) for e in range(self.C["D_V"])]

    def step(self, p: Packet) -> tuple[int, int, int, int, int]:
        """The verdict (label, flags, score, rule, centroid) of one packet given as a dict (``rows_of``)."""
        C = self.C
        F, L, Y = self.F, self.L, self.Y
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
        c = int(self.map[(((self._len_bin(0, p["ip_len"]) * 16 + iat) * 2 + d) * 8 + fc) * 4 + pc])
        sid, did = self.ports.get(p["sport"], 0), self.ports.get(p["dport"], 0)
        pid = did if sid == 0 or (did != 0 and did < sid) else sid
        tok = (c | (self._len_bin(1, p["ip_len"]) * 2 + d) << 8 | (iat * 2 + d) << 24
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
        ge = self._global_row(c, pc)
        if ge >= 0:
            _, _, _, _, g, gz = self.global_rows[ge]
            flags |= 0x10
            A = [A[y] + g[y] for y in range(Y)]
            Z += gz
        key = (p["proto"] | p["flags"] << _FIELD | d << 2 * _FIELD | min(npk, 255) << 3 * _FIELD  # = _pack([...])
               | p["sport"] << 4 * _FIELD | p["dport"] << 5 * _FIELD | p["ip_len"] << 6 * _FIELD)
        hard, S = self._rules(key)
        fused = [C["ALPHA"] * A[y] + C["BETA"] * S[y] * Z + ((C["GAMMA"] * self.cema[y] * Z) >> C["EMA_FRAC"])
                 for y in range(Y)]
        best = max(range(Y), key=lambda y: (fused[y], -y))
        srt = sorted(fused)
        score = min(srt[-1] - srt[-2], SCORE_MAX) if Y > 1 else 0
        label, rule = best, 0xFF
        if hard is not None:
            rule = int(self.hard_rule[hard])
            if C["LAMBDA_H"]:
                assert self.hard_label is not None  # hard rules carry their label
                label, score, flags = int(self.hard_label[hard]), SCORE_MAX, flags | 0x01
        self.ema = self._ema(self.ema, c)
        self.cema = self._ema(self.cema, label)
        if take:
            self.sample[self.n_samples % len(self.sample)] = p["ip_len"] << 16 | iat << 12 | d << 11 | fc << 8 | pc << 6
            self.n_samples += 1
        return label, flags, score, rule, c

    def registers(self) -> Registers:
        """The registers in the shape the targets' ``registers()`` give them."""
        return {"ema": list(self.ema), "class_ema": list(self.cema), "sample": list(self.sample),
                "sample_count": self.n_samples, "clock": self.clock,
                "counters": {"evictions": self.evictions, "new_flows": self.new_flows,
                             "parsed": self.parsed_count, "unparsed": self.unparsed}}


def oracle(art: Artifact, pkts: list[Packet]) -> tuple[list[tuple[int, int, int, int, int]], FinalState]:
    """(verdict tuples (label, flags, score, rule, centroid), final registers) for packets given as dicts."""
    o = Oracle(art)
    out = [o.step(p) for p in pkts]
    return out, FinalState(ema=list(o.ema), class_ema=list(o.cema), evictions=o.evictions, sample=list(o.sample),
                           samples=o.n_samples)


def rows_of(table: Any, ts_ns: Any = None) -> list[Packet]:
    """A packet table as the oracle's packet dicts. Step 0 is read from the spec here, not from the reference:
    untagged Ethernet, EtherType 0x0800, IPv4, parsed without error (the table's status)."""
    ts = table.ts_ns if ts_ns is None else ts_ns
    return [Packet(parsed=bool(lt == LINKTYPE_ETHERNET and not vl and et == ETHERTYPE_IPV4 and v == 4 and s == 0),
                   src=int(a), dst=int(b), sport=int(sp), dport=int(dp), proto=int(pr), flags=int(fl),
                   ip_len=int(il), ts=int(t))
            for lt, vl, et, v, s, a, b, sp, dp, pr, fl, il, t in zip(
                table.linktype.tolist(), table.vlan.tolist(), table.ethertype.tolist(), table.ip_version.tolist(),
                table.status.tolist(), table.src4.tolist(), table.dst4.tolist(), table.sport.tolist(),
                table.dport.tolist(), table.proto.tolist(), table.tcp_flags.tolist(), table.ip_len.tolist(),
                list(ts))]
