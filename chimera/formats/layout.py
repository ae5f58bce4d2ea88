"""A header layout written once: the field list every derived form (struct, scapy, C, P4) comes from.

The verdict header (``verdict.py``) and the trace-time shim (``shim.py``) are each one ``HeaderLayout``.
Their struct format, scapy layer, C struct body and P4 header body are derived here, so the Python
collector, the eBPF program and chimera.p4 cannot drift apart: the generated constants header
(chimera.compile.header) carries the C and P4 bodies, and tests compare every form with the fields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from scapy.fields import BitField, ByteField, Field, IntField, LongField, ShortField

_STRUCT_CODE = {8: "B", 16: "H", 32: "I", 64: "Q"}
_C_TYPE = {8: "__u8", 16: "__u16", 32: "__u32", 64: "__u64"}
_SCAPY = {8: ByteField, 16: ShortField, 32: IntField, 64: LongField}


@dataclass(frozen=True)
class HeaderField:
    """One field of a header: its name, width in bits, and what it means."""

    name: str
    bits: int
    doc: str
    default: int = 0


@dataclass(frozen=True)
class HeaderLayout:
    """A fixed header in network byte order, no padding: whole bytes, fields of 8/16/32/64 bits."""

    name: str
    ethertype: int
    fields: tuple[HeaderField, ...]
    #: scapy field overrides by name (flags with names, hex display); the width must stay the field's
    scapy_overrides: Mapping[str, Callable[[HeaderField], Field]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = [f.name for f in self.fields if f.bits not in _STRUCT_CODE]
        if bad:
            raise ValueError(f"{self.name}: fields {bad} are not 8, 16, 32 or 64 bits wide")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def struct(self) -> struct.Struct:
        """The ``struct`` layout (network byte order)."""
        return struct.Struct("!" + "".join(_STRUCT_CODE[f.bits] for f in self.fields))

    @property
    def length(self) -> int:
        return self.struct.size

    def c_fields(self) -> str:
        """The C struct body (eBPF), e.g. ``__u8 version; __u8 flags; ...``."""
        return " ".join(f"{_C_TYPE[f.bits]} {f.name};" for f in self.fields)

    def p4_fields(self) -> str:
        """The P4 header body, e.g. ``bit<8> version; bit<8> flags; ...``."""
        return " ".join(f"bit<{f.bits}> {f.name};" for f in self.fields)

    def scapy_fields(self) -> list[Field]:
        """The scapy ``fields_desc`` of the layer, in wire order."""
        out: list[Field] = []
        for f in self.fields:
            make = self.scapy_overrides.get(f.name)
            out.append(make(f) if make else _SCAPY[f.bits](f.name, f.default))
        return out

    def defaults(self) -> dict[str, int]:
        return {f.name: f.default for f in self.fields}

    def pack(self, **values: int) -> bytes:
        """The header's bytes; fields not given take their defaults."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise KeyError(f"{self.name}: no field(s) {sorted(unknown)}")
        vals = {**self.defaults(), **values}
        return self.struct.pack(*(int(vals[n]) for n in self.names))

    def unpack(self, buf: bytes | memoryview, offset: int = 0) -> dict[str, int]:
        return dict(zip(self.names, self.struct.unpack_from(buf, offset)))


def hex_short(f: HeaderField) -> Field:
    """A 16-bit field shown in hex (EtherTypes)."""
    from scapy.fields import XShortField
    return XShortField(f.name, f.default)


def plain_bits(f: HeaderField) -> Field:
    """A reserved field: shown as bits."""
    return BitField(f.name, f.default, f.bits)
