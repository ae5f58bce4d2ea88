"""The verdict header: inserted by the switch after the Ethernet header. The one definition.

    Ethernet(dst, src, type=0x88B5) | Verdict (30 bytes) | original L3 payload

``FIELDS`` below is the only place the layout is written. Everything else is
derived from it: the ``struct`` format the collector unpacks, the scapy
``Verdict`` layer, and the C and P4 field lists, which the generated constants
header (chimera.compile.header) carries as ``CHIMERA_VERDICT_FIELDS_C`` and
``CHIMERA_VERDICT_FIELDS_P4`` for the eBPF program and chimera.p4 to expand.
The collector strips the header and restores ``orig_type`` as the EtherType,
recovering the original frame byte for byte.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from scapy.fields import BitField, ByteField, Field, FlagsField, IntField, LongField, ShortField, XShortField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

ETH_P_VERDICT = 0x88B5  # IEEE 802 local experimental EtherType 1
VERDICT_VERSION = 1
NO_LABEL = 0xFF
NO_RULE = 0xFF
SCORE_MAX = 0xFFFFFFFF


class VerdictFlag(enum.IntFlag):
    HARD_VETO = 0x01   # a hard rule forced the label
    UNPARSED = 0x02    # not IPv4/TCP/UDP-parsable: forwarded without classification
    EVICTED = 0x04     # this packet evicted another flow from its slot (collision)
    NEW_FLOW = 0x08    # first packet of the flow in its slot
    GLOBAL_HIT = 0x10  # the global-layer ternary table matched


VERDICT_FLAG_NAMES = ["HARD_VETO", "UNPARSED", "EVICTED", "NEW_FLOW", "GLOBAL_HIT", "b5", "b6", "b7"]


@dataclass(frozen=True)
class HeaderField:
    """One field of the header: its name, width in bits, and what it means."""

    name: str
    bits: int
    doc: str


#: The layout, in wire order (network byte order, no padding).
FIELDS: tuple[HeaderField, ...] = (
    HeaderField("version", 8, "header version (VERDICT_VERSION)"),
    HeaderField("flags", 8, "VerdictFlag bits"),
    HeaderField("label", 8, "class index; NO_LABEL when unclassified"),
    HeaderField("rule_id", 8, "hard rule matched; NO_RULE when none"),
    HeaderField("score", 32, "margin of the top class over the second; SCORE_MAX on a hard veto"),
    HeaderField("map_version", 16, "map (model) version the verdict was computed with"),
    HeaderField("centroid", 8, "the packet's centroid id"),
    HeaderField("reserved", 8, "zero"),
    HeaderField("ts_in", 64, "switch ingress time, ns"),
    HeaderField("ts_out", 64, "switch egress time, ns"),
    HeaderField("orig_type", 16, "the frame's original EtherType"),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)
_STRUCT_CODE = {8: "B", 16: "H", 32: "I", 64: "Q"}
_C_TYPE = {8: "__u8", 16: "__u16", 32: "__u32", 64: "__u64"}

#: struct layout (network byte order), derived from FIELDS: what the collector unpacks.
VERDICT_STRUCT = struct.Struct("!" + "".join(_STRUCT_CODE[f.bits] for f in FIELDS))
VERDICT_LEN = VERDICT_STRUCT.size
assert VERDICT_LEN * 8 == sum(f.bits for f in FIELDS), "verdict fields must be whole bytes with no padding"


def c_fields() -> str:
    """The C struct body (eBPF), e.g. ``__u8 version; __u8 flags; ...``."""
    return " ".join(f"{_C_TYPE[f.bits]} {f.name};" for f in FIELDS)


def p4_fields() -> str:
    """The P4 header body, e.g. ``bit<8> version; bit<8> flags; ...``."""
    return " ".join(f"bit<{f.bits}> {f.name};" for f in FIELDS)


def _scapy_field(f: HeaderField) -> Field:
    if f.name == "flags":
        return FlagsField("flags", 0, 8, VERDICT_FLAG_NAMES)
    if f.name == "orig_type":
        return XShortField("orig_type", 0x0800)
    default = {"version": VERDICT_VERSION, "label": NO_LABEL, "rule_id": NO_RULE}.get(f.name, 0)
    if f.name == "reserved":
        return BitField("reserved", 0, 8)
    return {8: ByteField, 16: ShortField, 32: IntField, 64: LongField}[f.bits](f.name, default)


class Verdict(Packet):
    """Scapy view of the verdict header (for tests, captures and debugging), built from FIELDS."""

    name = "ChimeraVerdict"
    fields_desc = [_scapy_field(f) for f in FIELDS]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        from scapy.layers.inet import IP
        return IP if self.orig_type == 0x0800 else Packet.guess_payload_class(self, payload)


bind_layers(Ether, Verdict, type=ETH_P_VERDICT)


def pack(**values: int) -> bytes:
    """The header's bytes; fields not given take the Verdict layer's defaults."""
    defaults = {f.name: Verdict().getfieldval(f.name) for f in FIELDS}
    defaults.update(values)
    return VERDICT_STRUCT.pack(*(int(defaults[n]) for n in FIELD_NAMES))


def strip(frame: bytes) -> tuple[tuple[int, ...], bytes]:
    """(verdict fields in FIELDS order, original frame) of a marked frame; raises ValueError otherwise."""
    if len(frame) < 14 + VERDICT_LEN or frame[12:14] != struct.pack("!H", ETH_P_VERDICT):
        raise ValueError("not a verdict-marked frame")
    fields = VERDICT_STRUCT.unpack_from(frame, 14)
    orig = frame[:12] + struct.pack("!H", fields[-1]) + frame[14 + VERDICT_LEN:]
    return fields, orig
