"""The verdict header: inserted by the switch after the Ethernet header. The one definition.

    Ethernet(dst, src, type=0x88B5) | Verdict (34 bytes) | original L3 payload

``LAYOUT`` below is the only place the layout is written. Everything else is
derived from it (chimera.formats.layout): the ``struct`` format the collector
unpacks, the scapy ``Verdict`` layer, and the C and P4 field lists, which the
generated constants header (chimera.compile.header) carries as
``CHIMERA_VERDICT_FIELDS_C`` and ``CHIMERA_VERDICT_FIELDS_P4`` for the eBPF
program and chimera.p4 to expand. The collector strips the header and restores
``orig_type`` as the EtherType, recovering the original frame byte for byte.

Version 2 carries ``seq``: the frame's index from the trace-time shim
(chimera.formats.shim), so the collector joins verdicts to replayed frames by
index; ``NO_SEQ`` when the frame came without a shim (then it joins by bytes).
"""

from __future__ import annotations

import enum
import struct

from scapy.fields import FlagsField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

from chimera.formats.layout import HeaderField, HeaderLayout, hex_short, plain_bits

ETH_P_VERDICT = 0x88B5  # IEEE 802 local experimental EtherType 1
VERDICT_VERSION = 2
NO_LABEL = 0xFF
NO_RULE = 0xFF
NO_SEQ = 0xFFFFFFFF
SCORE_MAX = 0xFFFFFFFF


class VerdictFlag(enum.IntFlag):
    HARD_VETO = 0x01    # a hard rule forced the label
    UNPARSED = 0x02     # not IPv4/TCP/UDP-parsable: forwarded without classification
    EVICTED = 0x04      # this packet evicted another flow from its slot (collision)
    NEW_FLOW = 0x08     # first packet of the flow in its slot
    GLOBAL_HIT = 0x10   # the global-layer ternary table matched
    TRACE_CLOCK = 0x20  # the frame carried the trace-time shim: classified on the trace's clock


VERDICT_FLAG_NAMES = ["HARD_VETO", "UNPARSED", "EVICTED", "NEW_FLOW", "GLOBAL_HIT", "TRACE_CLOCK", "b6", "b7"]

#: The layout, in wire order (network byte order, no padding).
LAYOUT = HeaderLayout("verdict", ETH_P_VERDICT, (
    HeaderField("version", 8, "header version (VERDICT_VERSION)", VERDICT_VERSION),
    HeaderField("flags", 8, "VerdictFlag bits"),
    HeaderField("label", 8, "class index; NO_LABEL when unclassified", NO_LABEL),
    HeaderField("rule_id", 8, "hard rule matched; NO_RULE when none", NO_RULE),
    HeaderField("score", 32, "margin of the top class over the second; SCORE_MAX on a hard veto"),
    HeaderField("map_version", 16, "map (model) version the verdict was computed with"),
    HeaderField("centroid", 8, "the packet's centroid id"),
    HeaderField("reserved", 8, "zero"),
    HeaderField("seq", 32, "the frame's index from the trace-time shim; NO_SEQ without a shim", NO_SEQ),
    HeaderField("ts_in", 64, "switch ingress time, ns (the switch's own clock, whatever the classification clock)"),
    HeaderField("ts_out", 64, "switch egress time, ns"),
    HeaderField("orig_type", 16, "the frame's original EtherType", 0x0800),
), {"flags": lambda f: FlagsField(f.name, 0, 8, VERDICT_FLAG_NAMES), "orig_type": hex_short, "reserved": plain_bits})

FIELDS = LAYOUT.fields
FIELD_NAMES = LAYOUT.names
#: struct layout (network byte order), derived from the layout: what the collector unpacks.
VERDICT_STRUCT = LAYOUT.struct
VERDICT_LEN = VERDICT_STRUCT.size
assert VERDICT_LEN * 8 == sum(f.bits for f in FIELDS), "verdict fields must be whole bytes with no padding"
_ETH_TYPE = struct.pack("!H", ETH_P_VERDICT)


def c_fields() -> str:
    """The C struct body (eBPF), e.g. ``__u8 version; __u8 flags; ...``."""
    return LAYOUT.c_fields()


def p4_fields() -> str:
    """The P4 header body, e.g. ``bit<8> version; bit<8> flags; ...``."""
    return LAYOUT.p4_fields()


class Verdict(Packet):
    """Scapy view of the verdict header (for tests, captures and debugging), built from the layout."""

    name = "ChimeraVerdict"
    fields_desc = LAYOUT.scapy_fields()

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        from scapy.layers.inet import IP
        return IP if self.orig_type == 0x0800 else Packet.guess_payload_class(self, payload)


bind_layers(Ether, Verdict, type=ETH_P_VERDICT)


def pack(**values: int) -> bytes:
    """The header's bytes; fields not given take their defaults."""
    return LAYOUT.pack(**values)


def strip(frame: bytes) -> tuple[tuple[int, ...], bytes]:
    """(verdict fields in FIELDS order, original frame) of a marked frame; raises ValueError otherwise."""
    if len(frame) < 14 + VERDICT_LEN or frame[12:14] != _ETH_TYPE:
        raise ValueError("not a verdict-marked frame")
    fields = VERDICT_STRUCT.unpack_from(frame, 14)
    orig = frame[:12] + struct.pack("!H", fields[-1]) + frame[14 + VERDICT_LEN:]
    return fields, orig
