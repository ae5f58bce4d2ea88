"""Writing captures (nanosecond pcap, streamed in chunks) and normalizing frames to Ethernet."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from chimera.data.pcap import LINKTYPE_ETHERNET, PacketTable, read_raw
from chimera.errors import ChimeraError, DatasetError

SNAPLEN = 262_144
#: MACs given to frames that had no Ethernet header (cooked/raw captures).
SYNTH_SRC_MAC = bytes.fromhex("020000000001")
SYNTH_DST_MAC = bytes.fromhex("020000000002")
CHUNK = 100_000
#: nanosecond-resolution pcap, little endian, Ethernet
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
MAX_PCAP_SECONDS = 2**32 - 1


def _records(frames: list[bytes], ts_ns: np.ndarray) -> bytes:
    ts = np.asarray(ts_ns, np.int64)
    if ts.size and (ts.min() < 0 or ts.max() // 1_000_000_000 > MAX_PCAP_SECONDS):
        raise DatasetError(f"timestamps outside what a pcap can hold ({int(ts.min())} .. {int(ts.max())} ns)",
                           "normalize the capture timeline first (chimera.data.dataset does: rebase time jumps)")
    lens = np.fromiter((len(f) for f in frames), np.int64, len(frames))
    hdr = np.empty((len(frames), 4), "<u4")
    hdr[:, 0] = ts // 1_000_000_000
    hdr[:, 1] = ts % 1_000_000_000
    hdr[:, 2] = lens
    hdr[:, 3] = lens
    hb = hdr.tobytes()
    return b"".join(hb[16 * i:16 * i + 16] + f for i, f in enumerate(frames))


def write_pcap(path: str | os.PathLike[str], frames: Iterable[bytes], ts_ns: Iterable[int]) -> int:
    """Write Ethernet frames with exact ns timestamps; returns the number written."""
    with open(path, "wb") as fh:
        fh.write(PCAP_HEADER)
        return write_chunks(fh, _chunked(frames, ts_ns))


def _chunked(frames: Iterable[bytes], ts_ns: Iterable[int]) -> Iterator[tuple[list[bytes], np.ndarray]]:
    fr, ts = [], []
    for f, t in zip(frames, ts_ns):
        fr.append(f)
        ts.append(int(t))
        if len(fr) == CHUNK:
            yield fr, np.asarray(ts, np.int64)
            fr, ts = [], []
    if fr:
        yield fr, np.asarray(ts, np.int64)


def write_chunks(fh: BinaryIO, chunks: Iterable[tuple[list[bytes], np.ndarray]]) -> int:
    """Append pcap records chunk by chunk (the header is the caller's); returns the number written."""
    n = 0
    try:
        for frames, ts in chunks:
            fh.write(_records(frames, ts))
            n += len(frames)
    except OSError as e:
        raise ChimeraError(f"cannot write {getattr(fh, 'name', 'the capture')}: {e.strerror}",
                           "free space on that disk (df -h) or write elsewhere") from None
    return n


def to_ethernet(frame: bytes, linktype: int, l3_off: int, ethertype: int, vlan: bool) -> bytes:
    """The same L3 packet in an untagged Ethernet frame (what the dataplane parses)."""
    if linktype == LINKTYPE_ETHERNET:
        if not vlan:
            return frame
        return frame[:12] + struct.pack("!H", ethertype) + frame[l3_off:]
    # cooked (SLL/SLL2), NULL, PPP, HDLC and raw IP captures: give the L3 packet a synthetic header
    return SYNTH_DST_MAC + SYNTH_SRC_MAC + struct.pack("!H", ethertype) + frame[l3_off:]


def normalized_chunks(table: PacketTable, rows: np.ndarray,
                      ts_ns: np.ndarray | None = None) -> Iterator[tuple[list[bytes], np.ndarray]]:
    """Frames of ``rows`` (in the order given) as untagged Ethernet, CHUNK at a time, with their timestamps.

    Each capture file is memory-mapped once; only one chunk of frames is ever in memory.
    """
    maps: dict[int, np.ndarray] = {}
    ts_all = table.ts_ns if ts_ns is None else ts_ns
    for start in range(0, rows.shape[0], CHUNK):
        sel = rows[start:start + CHUNK]
        out: list[bytes] = []
        for r in sel.tolist():
            ci = int(table.capture[r])
            if ci not in maps:
                maps[ci] = read_raw(table.files[ci]).data
            o, c = int(table.offset[r]), int(table.caplen[r])
            out.append(to_ethernet(bytes(maps[ci][o:o + c]), int(table.linktype[r]), int(table.l3_off[r]),
                                   int(table.ethertype[r]), bool(table.vlan[r])))
        yield out, np.asarray(ts_all[sel] if ts_ns is None else ts_all[start:start + CHUNK], np.int64)


def _normalized_records(table: PacketTable, sel: np.ndarray, ts: np.ndarray, maps: dict[int, np.ndarray]) -> bytes:
    """pcap records of rows ``sel`` as untagged Ethernet. Frames that are already untagged Ethernet are copied
    with one numpy gather per capture file; only tagged or non-Ethernet frames are rewritten one by one.
    The wire length keeps what the link header change removed or added."""
    lt, vlan, l3 = table.linktype[sel], table.vlan[sel], table.l3_off[sel].astype(np.int64)
    plain = (lt == LINKTYPE_ETHERNET) & ~vlan
    caplen = table.caplen[sel].astype(np.int64)
    wirelen = table.wirelen[sel].astype(np.int64)
    delta = np.where(plain, 0, 14 - l3)  # bytes the new link header adds (negative: tags removed)
    cap_out, wire_out = caplen + delta, np.maximum(wirelen + delta, caplen + delta)
    rec = 16 + cap_out
    off = np.r_[0, np.cumsum(rec)[:-1]]
    buf = np.zeros(int(rec.sum()), np.uint8)
    rh = np.zeros((sel.size, 4), "<u4")
    rh[:, 0], rh[:, 1], rh[:, 2], rh[:, 3] = ts // 1_000_000_000, ts % 1_000_000_000, cap_out, wire_out
    buf[(off[:, None] + np.arange(16)).ravel()] = rh.view(np.uint8).ravel()
    cap = table.capture[sel]
    for ci in np.unique(cap):
        if int(ci) not in maps:
            maps[int(ci)] = read_raw(table.files[int(ci)]).data
        data = maps[int(ci)]
        fast = np.flatnonzero(plain & (cap == ci))
        if fast.size:
            n = caplen[fast]
            intra = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            src = np.repeat(table.offset[sel[fast]].astype(np.int64), n) + intra
            buf[np.repeat(off[fast] + 16, n) + intra] = data[src]
        for k in np.flatnonzero(~plain & (cap == ci)).tolist():
            r = int(sel[k])
            o, c = int(table.offset[r]), int(table.caplen[r])
            f = to_ethernet(bytes(data[o:o + c]), int(table.linktype[r]), int(table.l3_off[r]),
                            int(table.ethertype[r]), bool(table.vlan[r]))
            buf[off[k] + 16:off[k] + 16 + len(f)] = np.frombuffer(f, np.uint8)
    return buf.tobytes()


def captured_frames(table: PacketTable, rows: np.ndarray) -> list[bytes]:
    """Frames of ``rows`` byte for byte as captured (Ethernet captures only: what a testbed can send as is)."""
    if len(rows) and np.any(table.linktype[rows] != LINKTYPE_ETHERNET):
        raise DatasetError("frames as captured can be replayed from Ethernet captures only",
                           "replay with frames: normalized (the default)")
    maps: dict[int, np.ndarray] = {}
    out = []
    for r in np.asarray(rows).tolist():
        ci = int(table.capture[r])
        if ci not in maps:
            maps[ci] = read_raw(table.files[ci]).data
        o, c = int(table.offset[r]), int(table.caplen[r])
        out.append(bytes(maps[ci][o:o + c]))
    return out


def normalized_frames(table: PacketTable, rows: np.ndarray) -> list[bytes]:
    """Frames of ``rows`` as untagged Ethernet, in the order given (for replays: small tables)."""
    return [f for chunk, _ in normalized_chunks(table, rows) for f in chunk]


def write_normalized(path: Path, table: PacketTable, rows: np.ndarray, ts_ns: np.ndarray) -> int:
    """Stream ``rows`` of ``table`` (any link types, any files) into one Ethernet pcap at ``ts_ns``."""
    ts = np.asarray(ts_ns, np.int64)
    if ts.size and (ts.min() < 0 or ts.max() // 1_000_000_000 > MAX_PCAP_SECONDS):
        raise DatasetError(f"timestamps outside what a pcap can hold ({int(ts.min())} .. {int(ts.max())} ns)",
                           "normalize the capture timeline first (chimera.data.dataset does: rebase time jumps)")
    maps: dict[int, np.ndarray] = {}
    try:
        with open(path, "wb") as fh:
            fh.write(PCAP_HEADER)
            for start in range(0, rows.shape[0], CHUNK):
                fh.write(_normalized_records(table, rows[start:start + CHUNK], ts[start:start + CHUNK], maps))
    except OSError as e:
        raise ChimeraError(f"cannot write {path}: {e.strerror}",
                           "free space on that disk (df -h) or write elsewhere") from None
    return int(rows.shape[0])
