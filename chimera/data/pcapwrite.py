"""Writing captures (dpkt's writer, nanosecond timestamps) and normalizing frames to Ethernet."""

from __future__ import annotations

import os
import struct
from decimal import Decimal
from typing import Iterable

import dpkt
import numpy as np

from chimera.data.pcap import LINKTYPE_ETHERNET, PacketTable

SNAPLEN = 262_144
#: MACs given to frames that had no Ethernet header (cooked/raw captures).
SYNTH_SRC_MAC = bytes.fromhex("020000000001")
SYNTH_DST_MAC = bytes.fromhex("020000000002")


def write_pcap(path: str | os.PathLike[str], frames: Iterable[bytes], ts_ns: Iterable[int]) -> int:
    """Write Ethernet frames with exact ns timestamps; returns the number written."""
    n = 0
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, snaplen=SNAPLEN, linktype=dpkt.pcap.DLT_EN10MB, nano=True)
        for frame, t in zip(frames, ts_ns):
            w.writepkt_time(frame, Decimal(int(t)).scaleb(-9))
            n += 1
    return n


def to_ethernet(frame: bytes, linktype: int, l3_off: int, ethertype: int, vlan: bool) -> bytes:
    """The same L3 packet in an untagged Ethernet frame (what the dataplane parses)."""
    if linktype == LINKTYPE_ETHERNET:
        if not vlan:
            return frame
        return frame[:12] + struct.pack("!H", ethertype) + frame[l3_off:]
    # cooked (SLL/SLL2), NULL and raw IP captures: give the L3 packet a synthetic header
    return SYNTH_DST_MAC + SYNTH_SRC_MAC + struct.pack("!H", ethertype) + frame[l3_off:]


def normalized_frames(table: PacketTable, rows: np.ndarray) -> list[bytes]:
    """Frames of ``rows`` (all captures) as untagged Ethernet, in the order given."""
    out: list[bytes] = [b""] * rows.shape[0]
    cap = table.capture[rows]
    for ci in np.unique(cap):
        pos = np.flatnonzero(cap == ci)
        sel = rows[pos]
        with open(table.files[int(ci)], "rb") as fh:
            blob = fh.read()
        for p, r in zip(pos, sel):
            o, c = int(table.offset[r]), int(table.caplen[r])
            out[p] = to_ethernet(blob[o:o + c], int(table.linktype[r]), int(table.l3_off[r]),
                                 int(table.ethertype[r]), bool(table.vlan[r]))
    return out
