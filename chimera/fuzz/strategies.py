"""Hypothesis strategies for frame sequences, aimed at the corners where implementations differ.

``sequences(ctx)`` is stateful: each step draws a rule, and what the rule draws depends on the sequence so far
(the flows it opened, the time it reached). Rules, simplest first (Hypothesis shrinks toward the first):

- packet / flow: a packet of an open flow (either direction) or of a new one, at an inter-arrival gap on a
  bucket edge (2^k units of 2^10 ns, +-1 unit, +-1 ns);
- burst: more packets than the window holds, so tokens leave the ring;
- hammer: hundreds of identical packets (the centroid EMA saturates: its step rounds to 0);
- collide: a new flow crafted into an open flow's slot (eviction, then the evicted flow again);
- edge: a new flow crafted into the first or the last slot, past the window (the per-slot register arrays'
  index arithmetic at its ends);
- self: a host talking to itself (source address == destination): the canonical 5-tuple's order then falls to
  the ports, both directions, past the window;
- alias: another 5-tuple crafted to the same CRC-32 as an open flow's (the flow signature): every implementation
  must take it for the same flow, its direction relative to the flow's first packet (the open flow sometimes a
  host to itself on one port, whose order is a tie);
- rule: a packet on a hard or soft rule entry's boundary (its value, and one off in one field);
- malformed: a bent header (IHL, total length, options, fragment, truncation, VLAN/QinQ, IPv6, non-IP, no L4);
- flags: every TCP flag combination;
- wrap: packets straddling the 32-bit flow clock's wrap, or a gap of one whole wrap (aliasing);
- back: the clock steps back;
- install / failed install: a Map install between two packets, or one that fails after a few writes.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np
from hypothesis import strategies as st

from chimera.formats.artifact import Artifact
from chimera.fuzz.frames import MF, ODD_ETHERTYPES, FrameSpec
from chimera.fuzz.sequence import WRAP_NS, Event, InstallSpec, Sequence

UNIT_NS = 1 << 10          # the flow clock's unit (IAT_SHIFT)
HOSTS = (0x0A000001, 0x0A000002, 0x0A000003, 0xC0A80001, 0x00000000, 0xFFFFFFFF)
PROTOS = (6, 17, 1, 47, 0, 255)
RULES = ("packet", "flow", "burst", "flags", "rule", "malformed", "collide", "self", "alias", "wrap", "back", "install",
         "failed_install", "hammer", "edge")
#: the rule key's fields a packet can set (dir and flow_pkts come from the flow's state)
RULE_FIELDS = {0: "proto", 1: "tcp_flags", 4: "sport", 5: "dport", 6: "ip_len"}
IPV4_HDR, TCP_HDR, UDP_HDR = 20, 20, 8


@dataclass(frozen=True)
class Context:
    """What the generator aims at, read from the artifact: slot count, window, ports, rule entries, bins."""

    flow_slots: int
    window: int
    ports: tuple[int, ...]           # the port vocabulary (ids != 0) and edge values
    lengths: tuple[int, ...]         # length bin boundaries and their neighbours
    hard: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]  # hard rule entries (value, mask)
    soft: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]  # soft rule entries

    @staticmethod
    def of(art: Artifact) -> "Context":
        vocab = [int(p) for p in art.port_vocab.tolist()][:32]
        lens = sorted({max(28, min(1500, int(b) + d)) for b in [*art.len_lo.tolist(), *art.len_fine_lo.tolist()]
                       for d in (-1, 0, 1)})
        def entries(t: Any) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
            return tuple((tuple(int(x) for x in v), tuple(int(x) for x in m))
                         for v, m in zip(t.value.tolist(), t.mask.tolist()))
        return Context(art.c("FLOW_SLOTS"), art.c("WINDOW"), tuple(sorted({0, 1, 53, 80, 443, 65535, *vocab})),
                       tuple(lens) or (60,), entries(art.hard_rules), entries(art.soft_rules))


def slot_of(f: FrameSpec, slots: int) -> int:
    """The flow slot of a frame's 5-tuple (docs/pipeline.md step 1: CRC-32 of the canonical tuple)."""
    return zlib.crc32(canonical(f)) & (slots - 1)


@cache
def gaps() -> st.SearchStrategy[int]:
    """Inter-arrival gaps on the IAT buckets' edges: 2^k units (k < 20), one unit either side, one ns either
    side of a unit boundary; 0 (the same instant).

    This and every strategy below that a sequence draws more than once is built once (``cache``): Hypothesis
    validates each new strategy object at its first draw, and a sequence draws hundreds, which was half the
    fuzzer's time. The same strategies draw the same values: a seed gives the same sequences as before."""
    edge = st.builds(lambda k, du, dns: max(0, ((1 << k) + du) * UNIT_NS + dns),
                     st.integers(0, 20), st.sampled_from((0, -1, 1)), st.sampled_from((0, -1, 1)))
    return st.one_of(st.just(UNIT_NS), edge, st.just(0), st.integers(0, 50_000_000))


@cache
def _port(ctx: Context) -> st.SearchStrategy[int]:
    """A port: one the model knows (or an edge value), or any."""
    return st.one_of(st.sampled_from(ctx.ports), st.integers(0, 65535))


def payload_for(ctx: Context, proto: int, length: int) -> int:
    """Payload bytes that make the IPv4 total length ``length`` (as close as the headers allow)."""
    hdr = IPV4_HDR + (TCP_HDR if proto == 6 else UDP_HDR if proto == 17 else 8 if proto == 1 else 0)
    return max(0, min(1400, length - hdr))


@cache
@st.composite
def new_flow(draw: Any, ctx: Context) -> FrameSpec:
    """A frame of a new flow: protocol, hosts, ports (known or any), a length on a bin's edge, TCP flags."""
    proto = draw(st.sampled_from(PROTOS))
    src, dst = draw(st.sampled_from(HOSTS)), draw(st.sampled_from(HOSTS))
    sport = draw(_port(ctx))
    dport = draw(_port(ctx))
    length = draw(st.sampled_from(ctx.lengths))
    flags = draw(st.integers(0, 255)) if proto == 6 else 0
    return FrameSpec(src=src, dst=dst, proto=proto, sport=sport, dport=dport, tcp_flags=flags,
                     payload=payload_for(ctx, proto, length))


@st.composite
def malformed(draw: Any, base: FrameSpec) -> tuple[FrameSpec, str]:
    """A bent copy of ``base`` and what was bent."""
    how = draw(st.sampled_from(("ihl", "options", "ip_len", "fragment", "truncate", "vlan", "qinq", "ipv6",
                                "non_ip", "no_l4", "version")))
    if how == "ihl":
        return replace(base, ihl=draw(st.integers(0, 4))), "IHL below 5"
    if how == "options":
        ihl = draw(st.integers(6, 15))
        cut = draw(st.sampled_from((0, 0, 1, 4, (ihl - 5) * 4)))
        l4 = cut == 0 and draw(st.booleans())
        return replace(base, ihl=ihl, truncate=cut, l4=l4, payload=0 if cut else base.payload), \
            f"IHL {ihl} with options{', cut by ' + str(cut) if cut else ''}"
    if how == "ip_len":
        return replace(base, ip_len=draw(st.sampled_from((0, 1, 19, 20, 21, 40, 65535)))), "total length lies"
    if how == "fragment":
        return replace(base, frag=draw(st.sampled_from((MF, 1, MF | 1, 0x1FFF, 0x4000)))), "fragment bits"
    if how == "truncate":
        return replace(base, payload=0, truncate=draw(st.integers(1, 40))), "truncated headers"
    if how in ("vlan", "qinq", "ipv6"):
        return replace(base, kind=how), how
    if how == "non_ip":
        return replace(base, kind="non_ip", ethertype=draw(st.sampled_from(ODD_ETHERTYPES))), "non-IP"
    if how == "no_l4":
        return replace(base, l4=False, payload=0), "no L4 header"
    return replace(base, version=draw(st.sampled_from((0, 6, 15)))), "IP version not 4"


@st.composite
def on_rule(draw: Any, ctx: Context, base: FrameSpec) -> tuple[FrameSpec, str]:
    """A packet whose settable key fields sit on a rule entry's value (its wildcard bits drawn), one field
    possibly one off (the entry's boundary)."""
    tables = [(n, t) for n, t in (("hard", ctx.hard), ("soft", ctx.soft)) if t]
    if not tables:
        return base, "no rule entries"
    which, entries = draw(st.sampled_from(tables))
    e = draw(st.integers(0, len(entries) - 1))
    value, mask = entries[e]
    key = {}
    for i, name in RULE_FIELDS.items():
        width = 8 if i in (0, 1) else 16
        free = draw(st.integers(0, (1 << width) - 1))
        key[name] = (value[i] & mask[i]) | (free & ~mask[i] & ((1 << width) - 1))
    off = draw(st.sampled_from((None, *RULE_FIELDS.values())))
    if off is not None:
        width = 8 if off in ("proto", "tcp_flags") else 16
        key[off] = (key[off] + draw(st.sampled_from((-1, 1)))) % (1 << width)
    proto = key["proto"]
    f = replace(base, proto=proto, tcp_flags=key["tcp_flags"] if proto == 6 else 0, sport=key["sport"],
                dport=key["dport"])
    hdr = IPV4_HDR + (TCP_HDR if proto == 6 else UDP_HDR if proto == 17 else 8 if proto == 1 else 0)
    if key["ip_len"] >= hdr:
        f = replace(f, payload=min(key["ip_len"] - hdr, 1400))
    else:
        f = replace(f, ip_len=key["ip_len"])  # the header says it; the frame cannot be that short
    return f, f"{which} rule entry {e}" + (f", {off} one off" if off else "")


def canonical(f: FrameSpec) -> bytes:
    """The 13 bytes the flow signature is the CRC-32 of (docs/pipeline.md step 1)."""
    a, b = (f.src, f.sport), (f.dst, f.dport)
    lo, hi = (b, a) if a > b else (a, b)
    return struct.pack("!IIHHB", lo[0], hi[0], lo[1], hi[1], f.proto & 0xFF)


def alias_of(f: FrameSpec, hi_ip: int, lo_port: int, hi_port: int) -> FrameSpec | None:
    """A 5-tuple (``?.?.?.? : lo_port -> hi_ip : hi_port``) whose signature equals ``f``'s: CRC-32 is affine over
    GF(2), so the 32 bits of the low address that give any CRC solve a 32x32 linear system. None where the
    solution would not be the canonical low end, or is ``f`` itself."""
    tail = struct.pack("!IHHB", hi_ip, lo_port, hi_port, f.proto & 0xFF)
    base = zlib.crc32(bytes(4) + tail)
    want = zlib.crc32(canonical(f)) ^ base
    rows = [(zlib.crc32(struct.pack("!I", 1 << i) + tail) ^ base, 1 << i) for i in range(32)]
    basis: dict[int, tuple[int, int]] = {}  # pivot bit -> (crc image, address bits), reduced
    for img, bits in rows:
        for piv, (bimg, bbits) in basis.items():
            if img >> piv & 1:
                img, bits = img ^ bimg, bits ^ bbits
        if img:
            piv = img.bit_length() - 1
            for k, (kimg, kbits) in list(basis.items()):
                if kimg >> piv & 1:
                    basis[k] = (kimg ^ img, kbits ^ bits)
            basis[piv] = (img, bits)
    lo_ip = 0
    for piv, (img, bits) in basis.items():
        if want >> piv & 1:
            want, lo_ip = want ^ img, lo_ip ^ bits
    g = replace(f, src=lo_ip, dst=hi_ip, sport=lo_port, dport=hi_port)
    if want or canonical(g)[:12] != struct.pack("!IIHH", lo_ip, hi_ip, lo_port, hi_port) or \
            canonical(g) == canonical(f):
        return None
    return g


def _source_port_slots(f: FrameSpec, dport: int, slots: int) -> np.ndarray | None:
    """The slot of ``f``'s addresses and protocol with destination port ``dport``, for every source port (index):
    CRC-32 is affine over GF(2), so 16 CRCs give all 65536. None where the canonical order could depend on the
    source port (equal addresses)."""
    if f.src == f.dst:
        return None

    def crc(sport: int) -> int:
        return zlib.crc32(canonical(replace(f, sport=sport, dport=dport)))
    base = crc(0)
    table = np.array([base], np.uint32)
    for i in range(16):
        table = np.concatenate([table, table ^ np.uint32(crc(1 << i) ^ base)])
    return table & np.uint32(slots - 1)


def into_slot(f: FrameSpec, want: int, slots: int, start: int) -> FrameSpec:
    """A flow in slot ``want`` of ``slots``: ``f``'s addresses and protocol, source (then destination) ports
    searched from ``start`` (a slot of 65536 is found in about as many tries: each destination port's 65536
    source ports are computed at once, in the search's order). ``f`` itself is skipped; if no port pair of the
    four destination ports reaches the slot, the next source port (a flow, not necessarily in the slot)."""

    def frame(sp: int, dp: int) -> FrameSpec:
        return FrameSpec(f.kind, f.ethertype, f.src, f.dst, f.proto, sp, dp, f.tcp_flags, f.ihl, f.version,
                         f.ip_len, f.frag, f.payload, f.l4, f.truncate)
    order = (start + np.arange(1 << 16)) & 0xFFFF
    for j in range(4):
        dp = (f.dport + j) & 0xFFFF
        at = _source_port_slots(f, dp, slots)
        if at is not None:
            hit = at[order] == want
            if dp == f.dport:
                hit &= order != f.sport
            if hit.any():
                g = frame(int(order[int(np.argmax(hit))]), dp)
                assert slot_of(g, slots) == want  # the affine shortcut, checked on the one it found
                return g
            continue
        # equal addresses: the ports' order makes the canonical tuple (canonical() with src == dst), packed here
        # without a FrameSpec per try (a slot of 65536 takes about as many)
        for sp in order.tolist():
            if (sp, dp) == (f.sport, f.dport):
                continue
            key = struct.pack("!IIHHB", f.src, f.dst, min(sp, dp), max(sp, dp), f.proto & 0xFF)
            if zlib.crc32(key) & (slots - 1) == want:
                g = frame(sp, dp)
                assert slot_of(g, slots) == want  # the shortcut, checked on the one it found
                return g
    return replace(f, sport=(f.sport + 1) & 0xFFFF)


def collider(ctx: Context, f: FrameSpec, start: int) -> FrameSpec:
    """Another flow in ``f``'s slot."""
    return into_slot(f, slot_of(f, ctx.flow_slots), ctx.flow_slots, start)


def edge_slots(slots: int) -> tuple[int, int]:
    """The first and the last flow slot: where a per-slot register index (``slot * stride + offset``) meets the
    ends of its array, and an index computed wrongly leaves it (a ring index that subtracts its offset reads
    below slot 0's row: only a flow in slot 0 shows it)."""
    return 0, slots - 1


@st.composite
def sequences(draw: Any, ctx: Context, max_steps: int = 12) -> Sequence:
    """One sequence: a few rule steps on a growing set of flows (see the module docstring)."""
    events: list[Event] = []
    installs: list[InstallSpec] = []
    flows: list[FrameSpec] = []
    t = 0  # the sequence's own trace time

    def add(frame: FrameSpec, gap: int, why: str) -> None:
        """Append a frame ``gap`` ns after the last (never before the sequence's start)."""
        nonlocal t
        gap = max(gap, -t) if events else 0
        events.append(Event(frame, gap, why))
        t += gap

    def pick_flow() -> FrameSpec:
        if not flows or draw(st.integers(0, 4)) == 0:
            flows.append(draw(new_flow(ctx)))
            return flows[-1]
        f = flows[draw(st.integers(0, len(flows) - 1))]
        return f.reversed() if draw(st.booleans()) else f

    for _ in range(draw(st.integers(1, max_steps))):
        rule = draw(st.sampled_from(RULES))
        if rule in ("packet", "flow"):
            if rule == "flow":
                flows.append(draw(new_flow(ctx)))
            f = pick_flow() if rule == "packet" else flows[-1]
            for _ in range(draw(st.integers(1, 4))):
                add(f, draw(gaps()), rule)
        elif rule == "burst":
            f = pick_flow()
            for _ in range(draw(st.integers(ctx.window - 1, 3 * ctx.window + 1))):
                add(f if draw(st.integers(0, 3)) else f.reversed(), draw(st.sampled_from((0, UNIT_NS, 7 * UNIT_NS))),
                    "burst past the window")
        elif rule == "hammer":
            f = pick_flow()
            gap = draw(st.sampled_from((UNIT_NS, 100 * UNIT_NS)))
            for _ in range(draw(st.integers(100, 300))):
                add(f, gap, "hammer: EMA saturation")
        elif rule == "flags":
            f = pick_flow()
            f = replace(f, proto=6, tcp_flags=draw(st.integers(0, 255)), ihl=5, l4=True)
            add(f, draw(gaps()), f"TCP flags 0x{f.tcp_flags:02x}")
        elif rule == "rule":
            f, why = draw(on_rule(ctx, pick_flow()))
            add(f, draw(gaps()), why)
        elif rule == "malformed":
            f, why = draw(malformed(pick_flow()))
            add(f, draw(gaps()), why)
        elif rule == "collide":
            f = pick_flow()
            g = collider(ctx, f, draw(st.integers(0, 65535)))
            flows.append(g)
            add(f, draw(gaps()), "collide: the resident flow")
            add(g, draw(gaps()), f"collide: slot {slot_of(f, ctx.flow_slots)} taken over")
            add(f, draw(gaps()), "collide: the evicted flow returns")
        elif rule == "edge":
            f = replace(draw(new_flow(ctx)), proto=draw(st.sampled_from((6, 17))))  # ports in the flow key
            g = into_slot(f, draw(st.sampled_from(edge_slots(ctx.flow_slots))), ctx.flow_slots,
                          draw(st.integers(0, 65535)))
            flows.append(g)
            for _ in range(draw(st.integers(ctx.window + 1, 2 * ctx.window + 2))):
                add(g if draw(st.integers(0, 3)) else g.reversed(), draw(st.sampled_from((0, UNIT_NS))),
                    f"edge: slot {slot_of(g, ctx.flow_slots)} past the window")
        elif rule == "self":
            f = draw(new_flow(ctx))
            sport = draw(st.sampled_from(ctx.ports))
            f = replace(f, dst=f.src, sport=sport, dport=(sport + draw(st.sampled_from((1, -1, 1000)))) & 0xFFFF)
            flows.append(f)
            for _ in range(draw(st.integers(2, ctx.window + 2))):
                add(f if draw(st.booleans()) else f.reversed(), draw(gaps()), "a host to itself: ports decide")
        elif rule == "alias":
            f = replace(pick_flow(), proto=draw(st.sampled_from((6, 17))), kind="ipv4", ihl=5, version=4, ip_len=None,
                        frag=0, l4=True, truncate=0)
            if draw(st.booleans()):
                f = replace(f, dst=f.src, dport=f.sport)  # a host to itself on one port: either order is canonical
            ports = draw(st.sampled_from(ctx.ports)), draw(st.sampled_from(ctx.ports))
            alias = alias_of(f, draw(st.sampled_from(HOSTS)), *ports) or alias_of(f, 0xFFFFFFFF, *ports)
            if alias is not None:
                flows.extend((f, alias))
                add(f, draw(gaps()), "alias: a flow")
                for _ in range(draw(st.integers(1, 4))):
                    h = alias if draw(st.booleans()) else f
                    add(h if draw(st.booleans()) else h.reversed(), draw(gaps()),
                        "alias: the same CRC-32 signature from another 5-tuple")
        elif rule == "wrap":
            f = pick_flow()
            if draw(st.booleans()):  # straddle the next wrap of the flow clock
                before = draw(st.integers(1, 4)) * UNIT_NS
                nxt = (t // WRAP_NS + 1) * WRAP_NS
                add(f, max(0, nxt - before - t), "just before the flow clock wraps")
                add(f, before + draw(st.integers(0, 4)) * UNIT_NS, "just after the wrap")
            else:  # a whole wrap, give or take a unit: the 32-bit difference aliases
                add(f, WRAP_NS + draw(st.sampled_from((-UNIT_NS, 0, UNIT_NS))), "one whole wrap: aliasing")
        elif rule == "back":
            add(pick_flow(), -draw(st.sampled_from((1, UNIT_NS, 1000 * UNIT_NS))), "the clock steps back")
        elif rule in ("install", "failed_install"):
            fail = draw(st.integers(0, 3)) if rule == "failed_install" else None
            installs.append(InstallSpec(len(events), draw(st.integers(0, 2**16)), fail))
    if not events:  # every sequence classifies at least one packet
        add(draw(new_flow(ctx)), 0, "flow")
    return Sequence(tuple(events), tuple(installs))


def sample_sequences(ctx: Context, n: int, seed: int) -> list[Sequence]:
    """``n`` sequences drawn outside a test (a directed corpus; examples in docs), reproducible by ``seed``."""
    rng = np.random.default_rng(seed)
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    out: list[Sequence] = []

    @hseed(int(rng.integers(0, 2**31)))
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(sequences(ctx))
    def collect(seq: Sequence) -> None:
        out.append(seq)

    collect()
    return out[:n]
