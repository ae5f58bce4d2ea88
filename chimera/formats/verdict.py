"""The verdict header: inserted by the switch after the Ethernet header.

    Ethernet(dst, src, type=0x88B5) | Verdict (30 bytes) | original L3 payload

Fields mirror the P4 header and the eBPF struct bit for bit (the generated
constants header carries the same numbers). The collector strips the header
and restores ``orig_type`` as the EtherType, recovering the original frame
byte for byte.
"""

from __future__ import annotations

import enum
import struct

from scapy.fields import BitField, ByteField, FlagsField, IntField, LongField, ShortField, XShortField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

ETH_P_VERDICT = 0x88B5  # IEEE 802 local experimental EtherType 1
VERDICT_VERSION = 1
VERDICT_LEN = 30
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

#: struct layout (network byte order), the single definition used by the collector
VERDICT_STRUCT = struct.Struct("!BBBBIHBBQQH")
assert VERDICT_STRUCT.size == VERDICT_LEN


class Verdict(Packet):
    """Scapy view of the verdict header (for tests, captures and debugging)."""

    name = "ChimeraVerdict"
    fields_desc = [
        ByteField("version", VERDICT_VERSION),
        FlagsField("flags", 0, 8, VERDICT_FLAG_NAMES),
        ByteField("label", NO_LABEL),
        ByteField("rule_id", NO_RULE),
        IntField("score", 0),
        ShortField("map_version", 0),
        ByteField("centroid", 0),
        BitField("reserved", 0, 8),
        LongField("ts_in", 0),
        LongField("ts_out", 0),
        XShortField("orig_type", 0x0800),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        from scapy.layers.inet import IP
        return IP if self.orig_type == 0x0800 else Packet.guess_payload_class(self, payload)


bind_layers(Ether, Verdict, type=ETH_P_VERDICT)


def strip(frame: bytes) -> tuple[tuple[int, ...], bytes]:
    """(verdict fields, original frame) of a verdict-marked frame; raises ValueError otherwise."""
    if len(frame) < 14 + VERDICT_LEN or frame[12:14] != struct.pack("!H", ETH_P_VERDICT):
        raise ValueError("not a verdict-marked frame")
    fields = VERDICT_STRUCT.unpack_from(frame, 14)
    orig = frame[:12] + struct.pack("!H", fields[-1]) + frame[14 + VERDICT_LEN:]
    return fields, orig
