"""Reading capture files: the pcap and pcapng headers, the walk, the parse, into a PacketTable."""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chimera.data.pcap.constants import (LINKTYPE_HINT, MAX_SANE_CAPLEN, PCAP_GLOBAL_HLEN, PCAPNG_BYTE_ORDER_MAGIC,
                                         SUPPORTED_LINKTYPES)
from chimera.data.pcap.parse import parse_frames
from chimera.data.pcap.table import PacketTable
from chimera.data.pcap.walk import WALK_BYTE_ORDER, WALK_CORRUPT, WALK_TRUNCATED, walk_pcap, walk_pcapng
from chimera.errors import PcapError

log = logging.getLogger(__name__)
#: pcap magic (as read little endian) -> (byte order, ns per timestamp fraction unit)
PCAP_MAGICS = {0xA1B2C3D4: ("<", 1000), 0xA1B23C4D: ("<", 1), 0xD4C3B2A1: (">", 1000), 0x4D3CB2A1: (">", 1)}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
IDB_OPT_END, IDB_OPT_TSRESOL = 0, 9


@dataclass
class RawCapture:
    """Frames of one file before header parsing: what the walkers found."""

    data: np.ndarray         # the file's bytes (memory-mapped)
    offset: np.ndarray
    caplen: np.ndarray
    wirelen: np.ndarray
    ts_ns: np.ndarray
    linktype: np.ndarray
    truncated_tail: bool
    corrupt: str | None = None  # why the walk stopped early (the frames before it are kept), or None


def _load_bytes(path: Path) -> np.ndarray:
    """The file's bytes, memory-mapped read-only (the header walk and parse touch only what they need)."""
    if not path.exists():
        raise PcapError(f"{path}: no such file", "check the path (it is resolved from the current directory)")
    if path.is_dir():
        raise PcapError(f"{path}: is a directory, not a capture file", "pass a .pcap/.pcapng file")
    if path.stat().st_size == 0:
        raise PcapError(f"{path}: empty file (0 bytes), not a pcap or pcapng capture",
                        "re-capture or re-download it; an empty file has no header")
    return np.memmap(path, dtype=np.uint8, mode="r")


def read_raw(path: str | os.PathLike[str]) -> RawCapture:
    """Walk a pcap or pcapng file; raises PcapError naming the file and problem."""
    p = Path(path)
    data = _load_bytes(p)
    size = data.shape[0]
    body = data
    head = bytes(body[:PCAP_GLOBAL_HLEN])
    if len(head) >= 4 and head[:4] == PCAPNG_MAGIC:
        return _read_pcapng(p, data, body)
    magic_le = struct.unpack("<I", head[:4])[0] if len(head) >= 4 else 0
    if magic_le not in PCAP_MAGICS:
        raise PcapError(f"{p}: not a pcap or pcapng file (magic 0x{magic_le:08x})",
                        "give a libpcap .pcap or a .pcapng capture; convert others with editcap -F pcap")
    if size < PCAP_GLOBAL_HLEN:
        raise PcapError(f"{p}: pcap global header truncated ({size} of {PCAP_GLOBAL_HLEN} bytes)",
                        "the file is cut short; re-copy it")
    endian, frac_to_ns = PCAP_MAGICS[magic_le]
    linktype = struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF
    if linktype not in SUPPORTED_LINKTYPES:
        raise PcapError(f"{p}: unsupported link type {linktype}", LINKTYPE_HINT)
    offs, caps, wires, secs, fracs, end, err = walk_pcap(body, endian == ">", PCAP_GLOBAL_HLEN)
    corrupt = None
    if err == WALK_CORRUPT:
        corrupt = _corrupt(p, f"corrupt record header at byte {end} (captured length > {MAX_SANE_CAPLEN})",
                           offs.shape[0])
    ts = secs.astype(np.int64) * 1_000_000_000 + fracs.astype(np.int64) * frac_to_ns
    if err == WALK_TRUNCATED:
        log.warning("%s: incomplete last record at byte %d (file cut short); it is counted and skipped", p, end)
    return RawCapture(data, offs, caps, wires, ts, np.full(offs.shape[0], linktype, np.uint16),
                      err == WALK_TRUNCATED, corrupt)


def _corrupt(p: Path, what: str, readable: int) -> str:
    """A capture corrupt part-way keeps its readable prefix (with a warning); one with no readable frame fails."""
    fix = "the file is damaged; repair it with 'pcapfix' or cut the readable prefix with 'editcap'"
    if readable == 0:
        raise PcapError(f"{p}: {what}, before any complete frame", fix)
    msg = f"{what}; the {readable} frames before it are kept"
    log.warning("%s: %s (%s)", p, msg, fix)
    return msg


def _idb_info(data: np.ndarray, off: int, endian: str) -> tuple[int, tuple[int, int]]:
    """(linktype, ns per tick as (numerator, denominator)) of the Interface Description Block at ``off``."""
    blen = struct.unpack(endian + "I", bytes(data[off + 4:off + 8]))[0]
    body = bytes(data[off:off + blen])  # the block alone (walk_pcapng checked it lies in the file)
    linktype = struct.unpack_from(endian + "H", body, 8)[0]
    ns_per_tick_num, ns_per_tick_den = 1000, 1  # default resolution: microseconds
    opt = 16
    end = blen - 4
    while opt + 4 <= end:
        code, olen = struct.unpack_from(endian + "HH", body, opt)
        if code == IDB_OPT_END:
            break
        if code == IDB_OPT_TSRESOL and olen >= 1:
            r = int(body[opt + 4])
            if r & 0x80:
                ns_per_tick_num, ns_per_tick_den = 10**9, 2 ** (r & 0x7F)
            else:
                ns_per_tick_num, ns_per_tick_den = (10 ** (9 - r), 1) if r <= 9 else (1, 10 ** (r - 9))
        opt += 4 + ((olen + 3) & ~3)
    return linktype, (ns_per_tick_num, ns_per_tick_den)


def _read_pcapng(p: Path, data: np.ndarray, body: np.ndarray) -> RawCapture:
    if body.shape[0] < 12:
        raise PcapError(f"{p}: pcapng section header truncated", "the file is cut short; re-copy it")
    bom = bytes(body[8:12])
    endian = {PCAPNG_BYTE_ORDER_MAGIC.to_bytes(4, "little"): "<",
              PCAPNG_BYTE_ORDER_MAGIC.to_bytes(4, "big"): ">"}.get(bom)
    if endian is None:
        raise PcapError(f"{p}: pcapng byte-order magic is wrong ({bom.hex()})", "the file is damaged")
    offs, caps, wires, tss, ifs, idbs, end, err = walk_pcapng(body, endian == ">")
    corrupt = None
    if err == WALK_CORRUPT:
        corrupt = _corrupt(p, f"corrupt pcapng block at byte {end}", offs.shape[0])
    if err == WALK_BYTE_ORDER:
        corrupt = _corrupt(p, f"a pcapng section at byte {end} changes the byte order (split it with editcap)",
                           offs.shape[0])
    infos = [_idb_info(body, int(o), endian) for o in idbs]
    if offs.shape[0] and (not infos or int(ifs.max()) >= len(infos)):
        raise PcapError(f"{p}: packet refers to an interface with no Interface Description Block",
                        "the file is damaged")
    for lt, _ in infos:
        if lt not in SUPPORTED_LINKTYPES:
            raise PcapError(f"{p}: unsupported link type {lt}", LINKTYPE_HINT)
    linktype = np.array([lt for lt, _ in infos] or [0], np.uint16)[ifs] if offs.shape[0] else np.zeros(0, np.uint16)
    ts = np.zeros(offs.shape[0], np.int64)
    for i, (_, (num, den)) in enumerate(infos):
        m = ifs == i
        if m.any():
            t = tss[m]
            # ticks -> ns without overflow for any resolution up to 2**-32 s
            ts[m] = ((t // np.uint64(den)) * np.uint64(num)
                     + (t % np.uint64(den)) * np.uint64(num) // np.uint64(den)).astype(np.int64)
    if err == WALK_TRUNCATED:
        log.warning("%s: incomplete last block at byte %d (file cut short); it is counted and skipped", p, end)
    return RawCapture(data, offs, caps, wires, ts, linktype, err == WALK_TRUNCATED, corrupt)


def read_pcap(path: str | os.PathLike[str]) -> PacketTable:
    """Read a pcap/pcapng file into a PacketTable (one capture, index 0)."""
    raw = read_raw(path)
    cols = parse_frames(raw.data, raw.offset, raw.caplen, raw.linktype)
    n = raw.offset.shape[0]
    return PacketTable(ts_ns=raw.ts_ns, caplen=raw.caplen, wirelen=raw.wirelen, offset=raw.offset,
                       capture=np.zeros(n, np.uint16), linktype=raw.linktype, **cols,
                       files=[str(path)], truncated_records=int(raw.truncated_tail),
                       corrupt=[raw.corrupt] if raw.corrupt else [])
