"""Decision-point coverage: one counter per branch of docs/pipeline.md's steps. The one definition.

Every implementation keeps the same array of counters and adds one each time a packet takes a branch: the
reference (always: the counters are cheap there), ``chimera.bpf.c`` and ``chimera.p4`` when built with
``-DCHIMERA_COVERAGE`` (the fuzzer's builds; a production build declares the array and never touches it, so
its packet rate does not pay for it). The counters are state like any register: the fuzzer compares them
across targets, so a branch taken on one target and not on another is a difference, not just a gap in a
report. ``POINTS`` below is the only list; the C and P4 index constants (``CHIMERA_COV_<NAME>``) are written
into the generated constants header by chimera.compile.header, the reference imports the ``COV_<NAME>``
integers.

``needs`` says what an artifact must have for a point to be reachable (``constant>0`` or ``constant=0``);
coverage is reported against the points each artifact can reach.
"""

from __future__ import annotations

from dataclasses import dataclass

from chimera.formats.artifact import Artifact


@dataclass(frozen=True)
class Point:
    name: str
    step: str      # the step of docs/pipeline.md ("0" .. "10")
    what: str
    needs: tuple[str, ...] = ()  # artifact conditions for reachability: "NAME>0" or "NAME=0"


POINTS: tuple[Point, ...] = (
    Point("parsed", "0", "an IPv4 packet the parser accepts"),
    Point("unparsed", "0", "a frame the parser rejects (non-IPv4, tagged, bad header, fragment, truncated)"),
    Point("evict", "1", "another flow's signature in a used slot: the slot is taken over"),
    Point("new_flow", "2", "a new flow (or a taken-over slot) resets the slot"),
    Point("same_flow", "2", "a packet of the flow the slot holds"),
    Point("reverse_dir", "2", "a packet in the flow's reverse direction (d = 1)"),
    Point("iat_top", "2", "the top inter-arrival bucket (IAT_BUCKETS - 1): the longest gaps"),
    Point("clock_wrap", "2", "the 32-bit flow clock wrapped since the flow's last packet (tsu < last)"),
    Point("pkts_saturated", "2", "the per-flow packet count is saturated at 65535"),
    Point("proto_tcp", "3", "protocol class TCP"),
    Point("proto_udp", "3", "protocol class UDP"),
    Point("proto_icmp", "3", "protocol class ICMP"),
    Point("proto_other", "3", "protocol class other"),
    Point("port_both", "3", "both ports are in port_vocab: the higher-ranked id is taken", ("PORT_ENTRIES>0",)),
    Point("port_hit", "3", "a port of the packet is in port_vocab", ("PORT_ENTRIES>0",)),
    Point("port_miss", "3", "neither port is in port_vocab (id 0)"),
    Point("window_full", "4", "the ring is full: the oldest token leaves the window"),
    Point("global_hit", "5", "the global layer's ternary table matched", ("GLOBAL_ENTRIES>0",)),
    Point("global_miss", "5", "the global layer's table missed"),
    Point("hard_hit", "6", "a hard rule matched", ("HARD_ENTRIES>0",)),
    Point("hard_miss", "6", "no hard rule matched"),
    Point("soft_fired", "6", "at least one soft rule fired", ("SOFT_ENTRIES>0",)),
    Point("soft_none", "6", "no soft rule fired"),
    Point("veto", "7", "a hard rule forced the label (LAMBDA_H = 1)", ("HARD_ENTRIES>0", "LAMBDA_H>0")),
    Point("no_veto", "7", "a hard rule matched and was only recorded (LAMBDA_H = 0)", ("HARD_ENTRIES>0", "LAMBDA_H=0")),
    Point("prior", "7", "the class-EMA prior entered the fused score (GAMMA > 0)", ("GAMMA>0",)),
    Point("tie", "7", "the top two fused scores are equal (margin 0)", ("NUM_CLASSES>1",)),
    Point("margin_clamp", "7", "the margin exceeds SCORE_MAX and is clamped"),
    Point("ema_stall", "8", "the centroid EMA's step rounds to 0 short of its target (EMA saturation)"),
    Point("sample", "9", "a token sample is taken"),
    Point("sample_wrap", "9", "the sample ring wraps: a sample overwrites an older one"),
)

INDEX: dict[str, int] = {p.name: i for i, p in enumerate(POINTS)}
N_POINTS = len(POINTS)

# the indices as module constants, for the reference's compiled loop (numba reads globals as constants)
COV_PARSED, COV_UNPARSED, COV_EVICT, COV_NEW_FLOW, COV_SAME_FLOW, COV_REVERSE_DIR, COV_IAT_TOP, COV_CLOCK_WRAP, \
    COV_PKTS_SATURATED, COV_PROTO_TCP, COV_PROTO_UDP, COV_PROTO_ICMP, COV_PROTO_OTHER, COV_PORT_BOTH, COV_PORT_HIT, \
    COV_PORT_MISS, COV_WINDOW_FULL, COV_GLOBAL_HIT, COV_GLOBAL_MISS, COV_HARD_HIT, COV_HARD_MISS, COV_SOFT_FIRED, \
    COV_SOFT_NONE, COV_VETO, COV_NO_VETO, COV_PRIOR, COV_TIE, COV_MARGIN_CLAMP, COV_EMA_STALL, COV_SAMPLE, COV_SAMPLE_WRAP = \
    range(N_POINTS)
assert [COV_PARSED, COV_SAMPLE_WRAP] == [INDEX["parsed"], INDEX["sample_wrap"]], "COV_* out of step with POINTS"


def c_defines() -> list[str]:
    """``#define CHIMERA_COV_<NAME> i`` for each point, and the count (the constants header carries them)."""
    return [f"#define CHIMERA_COV_{p.name.upper()} {i}" for i, p in enumerate(POINTS)] + \
        [f"#define CHIMERA_COV_POINTS {N_POINTS}"]


def _global_full(art: Artifact) -> bool:
    """Whether the global layer's table matches every (centroid, protocol class): then it never misses."""
    gt = art.global_table
    if len(gt) == 0:
        return False
    return all(any((c & cm) == (cv & cm) and (pc & pm) == (pv & pm)
                   for cv, cm, pv, pm in zip(gt.c_value.tolist(), gt.c_mask.tolist(), gt.pc_value.tolist(),
                                             gt.pc_mask.tolist()))
               for c in range(art.c("NUM_CENTROIDS")) for pc in range(4))


def reachable(art: Artifact, point: Point) -> bool:
    """Whether ``art`` can take the branch at all (by its constants; the global layer's miss by its table)."""
    if point.name == "global_miss" and _global_full(art):
        return False
    for cond in point.needs:
        name, op, val = (cond.partition(">") if ">" in cond else cond.partition("="))
        have = int(art.constants.get(name, 0))
        if (op == ">" and not have > int(val)) or (op == "=" and have != int(val)):
            return False
    return True


def as_dict(counts: list[int] | tuple[int, ...]) -> dict[str, int]:
    """Counters as ``{point: count}`` (a register read gives them in POINTS order)."""
    return {p.name: int(c) for p, c in zip(POINTS, counts)}
