"""The columnar packet table: one row per frame, every header field a numpy column."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from chimera.data.pcap.constants import ParseStatus


def format_addresses(a: np.ndarray) -> list[str]:
    """The table's 16-byte addresses as text (IPv4-mapped ones as a.b.c.d); "" for a packet with none."""
    import ipaddress
    out = []
    for x in a:
        b = bytes(x)
        out.append("" if not any(b) else str(ipaddress.ip_address(b[12:] if b[:12] == b"\0" * 10 + b"\xff\xff" else b)))
    return out


@dataclass
class PacketTable:
    """One capture (or a concatenation of captures) as columns.

    Addresses are 16-byte arrays (IPv4 as ::ffff:a.b.c.d) so IPv4 and IPv6
    flows live in one key space; ``src4``/``dst4`` repeat IPv4 addresses as
    uint32 for the dataplane, which parses IPv4 only.
    """

    ts_ns: np.ndarray        # int64, capture timestamp
    caplen: np.ndarray       # uint32, bytes captured
    wirelen: np.ndarray      # uint32, bytes on the wire
    offset: np.ndarray       # int64, byte offset of the frame in its file
    capture: np.ndarray      # uint16, index into ``files``
    linktype: np.ndarray     # uint16
    status: np.ndarray       # uint8, ParseStatus
    ethertype: np.ndarray    # uint16, L3 protocol after any VLAN tag (0 if unknown)
    vlan: np.ndarray         # bool, an 802.1Q/ad tag was present
    l3_off: np.ndarray       # uint16, offset of the IP header in the frame
    ip_version: np.ndarray   # uint8, 0, 4 or 6
    ip_len: np.ndarray       # uint16, IPv4 total length / IPv6 payload length + 40
    ttl: np.ndarray          # uint8, TTL / hop limit
    proto: np.ndarray        # uint8, IP protocol / IPv6 next header
    src: np.ndarray          # (N, 16) uint8
    dst: np.ndarray          # (N, 16) uint8
    src4: np.ndarray         # uint32 (0 for non-IPv4)
    dst4: np.ndarray         # uint32
    sport: np.ndarray        # uint16 (0 when absent)
    dport: np.ndarray        # uint16
    tcp_flags: np.ndarray    # uint8 (0 when not TCP)
    files: list[str] = field(default_factory=list)
    truncated_records: int = 0   # incomplete records at the end of files (not in the table)
    corrupt: list[str] = field(default_factory=list)  # captures read only up to a corrupt record: why

    def __len__(self) -> int:
        return int(self.ts_ns.shape[0])

    COLUMNS = ("ts_ns", "caplen", "wirelen", "offset", "capture", "linktype", "status",
               "ethertype", "vlan", "l3_off", "ip_version", "ip_len", "ttl", "proto",
               "src", "dst", "src4", "dst4", "sport", "dport", "tcp_flags")

    def take(self, index: np.ndarray | slice) -> "PacketTable":
        """Rows ``index`` (bool mask, integer positions or a slice), same files."""
        cols = {c: getattr(self, c)[index] for c in self.COLUMNS}
        return PacketTable(**cols, files=list(self.files), truncated_records=0)

    def status_counts(self) -> dict[str, int]:
        """Frames per parse outcome, by name (for manifests)."""
        counts = np.bincount(self.status, minlength=len(ParseStatus))
        return {s.name.lower(): int(counts[s]) for s in ParseStatus}

    @staticmethod
    def concat(tables: list["PacketTable"]) -> "PacketTable":
        """Concatenate tables; capture indices are renumbered into one file list."""
        if not tables:
            raise ValueError("no tables to concatenate")
        files: list[str] = []
        cols: dict[str, list[np.ndarray]] = {c: [] for c in PacketTable.COLUMNS}
        for t in tables:
            for c in PacketTable.COLUMNS:
                v = getattr(t, c)
                if c == "capture":
                    v = (v + len(files)).astype(np.uint16)
                cols[c].append(v)
            files.extend(t.files)
        return PacketTable(**{c: np.concatenate(v) for c, v in cols.items()}, files=files,
                           truncated_records=sum(t.truncated_records for t in tables),
                           corrupt=[m for t in tables for m in t.corrupt])
