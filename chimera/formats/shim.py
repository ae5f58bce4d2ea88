"""The trace-time shim: a header the harness puts in every replayed frame so the switch classifies on the
trace's clock, not its own. The one definition.

    Ethernet(dst, src, type=0x88B6) | Shim (16 bytes) | original L3 payload (IPv4, or whatever it was)

The switch (chimera.bpf.c, chimera.p4) parses the shim, takes ``now`` from ``trace_ns`` instead of its
ingress timestamp, removes the shim and restores ``orig_type`` before its own output, and copies
``index`` into the verdict header's ``seq``. A frame without a shim is classified on the switch's own
clock (docs/pipeline.md, "Clocks").

``trace_ns`` is nanoseconds since the trace's origin: the capture time minus an origin that is a multiple
of 2^ORIGIN_ALIGN_BITS ns. Because the origin is such a multiple, ``(t - origin) >> IAT_SHIFT`` differs
from ``t >> IAT_SHIFT`` by a constant for any IAT_SHIFT <= ORIGIN_ALIGN_BITS, and every per-flow
inter-arrival (a difference, modulo 2^32 units) is the same on both clocks: the reference on the capture's
own timestamps and a switch on the shim's clock give the same verdicts.

Like the verdict header, ``LAYOUT`` is the only place the layout is written: the struct, scapy, C and P4
forms are derived from it (chimera.formats.layout), the C and P4 bodies through the generated constants
header (``CHIMERA_SHIM_FIELDS_C`` / ``CHIMERA_SHIM_FIELDS_P4``).
"""

from __future__ import annotations

import struct

import numpy as np
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

from chimera.formats.layout import HeaderField, HeaderLayout, hex_short

ETH_P_SHIM = 0x88B6  # IEEE 802 local experimental EtherType 2
SHIM_VERSION = 1
#: the origin of trace time is a multiple of 2^ORIGIN_ALIGN_BITS ns (>= any IAT_SHIFT the compiler accepts)
ORIGIN_ALIGN_BITS = 24

LAYOUT = HeaderLayout("shim", ETH_P_SHIM, (
    HeaderField("version", 8, "shim version (SHIM_VERSION)", SHIM_VERSION),
    HeaderField("flags", 8, "zero (reserved)"),
    HeaderField("index", 32, "the frame's index in the replay (0-based)"),
    HeaderField("trace_ns", 64, "capture time, ns since the trace's origin"),
    HeaderField("orig_type", 16, "the frame's original EtherType (or 802.3 length)", 0x0800),
), {"orig_type": hex_short})

SHIM_STRUCT = LAYOUT.struct
SHIM_LEN = SHIM_STRUCT.size
_ETH_TYPE = struct.pack("!H", ETH_P_SHIM)


def c_fields() -> str:
    return LAYOUT.c_fields()


def p4_fields() -> str:
    return LAYOUT.p4_fields()


class Shim(Packet):
    """Scapy view of the shim (tests, debugging), built from the layout."""

    name = "ChimeraTraceShim"
    fields_desc = LAYOUT.scapy_fields()

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        from scapy.layers.inet import IP
        return IP if self.orig_type == 0x0800 else Packet.guess_payload_class(self, payload)


bind_layers(Ether, Shim, type=ETH_P_SHIM)


def trace_origin(ts_ns: np.ndarray) -> int:
    """The trace's origin: its first timestamp rounded down to a multiple of 2^ORIGIN_ALIGN_BITS ns."""
    ts = np.asarray(ts_ns, np.int64)
    if ts.size == 0:
        return 0
    return int(ts.min()) >> ORIGIN_ALIGN_BITS << ORIGIN_ALIGN_BITS


def insert(frame: bytes, index: int, trace_ns: int) -> bytes:
    """``frame`` with the shim after its Ethernet header; a frame shorter than Ethernet is returned as is
    (it cannot carry one: the switch sees it unparsed, on its own clock)."""
    if len(frame) < 14:
        return frame
    orig = int.from_bytes(frame[12:14], "big")
    return frame[:12] + _ETH_TYPE + SHIM_STRUCT.pack(SHIM_VERSION, 0, index, trace_ns, orig) + frame[14:]


def insert_all(frames: list[bytes], trace_ns: np.ndarray) -> list[bytes]:
    """Every frame shimmed, its index being its position."""
    return [insert(f, i, int(t)) for i, (f, t) in enumerate(zip(frames, np.asarray(trace_ns, np.int64)))]


def strip(frame: bytes) -> tuple[dict[str, int], bytes]:
    """(shim fields, original frame) of a shimmed frame; raises ValueError otherwise."""
    if len(frame) < 14 + SHIM_LEN or frame[12:14] != _ETH_TYPE:
        raise ValueError("not a shimmed frame")
    fields = LAYOUT.unpack(frame, 14)
    return fields, frame[:12] + struct.pack("!H", fields["orig_type"]) + frame[14 + SHIM_LEN:]
