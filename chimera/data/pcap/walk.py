"""The record/block walks: a numba loop over a capture's record (pcap) or block (pcapng) headers that finds each
frame's offset, lengths and timestamp without touching the frames themselves."""

from __future__ import annotations

import numba
import numpy as np

from chimera.data.pcap.constants import (MAX_SANE_CAPLEN, PCAP_RECORD_HLEN, PCAPNG_BYTE_ORDER_MAGIC, PCAPNG_EPB,
                                         PCAPNG_IDB, PCAPNG_MAX_BLOCK, PCAPNG_OPB, PCAPNG_SHB, PCAPNG_SPB)

WALK_OK, WALK_TRUNCATED, WALK_CORRUPT, WALK_BYTE_ORDER = 0, 1, 2, 3  # why a walk ended


@numba.njit(cache=True)
def walk_pcap(buf: np.ndarray, big_endian: bool, start: int):  # pragma: no cover - jitted
    """Record offsets of a classic pcap. Returns (offs, caplen, wirelen, sec, frac, end, err)."""
    n = buf.shape[0]
    cap = max(16, (n - start) // 32)
    offs = np.empty(cap, np.int64)
    caps = np.empty(cap, np.uint32)
    wires = np.empty(cap, np.uint32)
    secs = np.empty(cap, np.uint32)
    fracs = np.empty(cap, np.uint32)
    k = 0
    off = start
    err = WALK_OK
    while off + PCAP_RECORD_HLEN <= n:
        if big_endian:
            s = (np.uint32(buf[off]) << 24) | (np.uint32(buf[off + 1]) << 16) | (np.uint32(buf[off + 2]) << 8) | np.uint32(buf[off + 3])
            f = (np.uint32(buf[off + 4]) << 24) | (np.uint32(buf[off + 5]) << 16) | (np.uint32(buf[off + 6]) << 8) | np.uint32(buf[off + 7])
            c = (np.uint32(buf[off + 8]) << 24) | (np.uint32(buf[off + 9]) << 16) | (np.uint32(buf[off + 10]) << 8) | np.uint32(buf[off + 11])
            w = (np.uint32(buf[off + 12]) << 24) | (np.uint32(buf[off + 13]) << 16) | (np.uint32(buf[off + 14]) << 8) | np.uint32(buf[off + 15])
        else:
            s = np.uint32(buf[off]) | (np.uint32(buf[off + 1]) << 8) | (np.uint32(buf[off + 2]) << 16) | (np.uint32(buf[off + 3]) << 24)
            f = np.uint32(buf[off + 4]) | (np.uint32(buf[off + 5]) << 8) | (np.uint32(buf[off + 6]) << 16) | (np.uint32(buf[off + 7]) << 24)
            c = np.uint32(buf[off + 8]) | (np.uint32(buf[off + 9]) << 8) | (np.uint32(buf[off + 10]) << 16) | (np.uint32(buf[off + 11]) << 24)
            w = np.uint32(buf[off + 12]) | (np.uint32(buf[off + 13]) << 8) | (np.uint32(buf[off + 14]) << 16) | (np.uint32(buf[off + 15]) << 24)
        if c > MAX_SANE_CAPLEN:
            err = WALK_CORRUPT
            break
        if off + PCAP_RECORD_HLEN + c > n:
            err = WALK_TRUNCATED
            break
        if k == offs.shape[0]:
            offs = np.concatenate((offs, np.empty(k, np.int64)))
            caps = np.concatenate((caps, np.empty(k, np.uint32)))
            wires = np.concatenate((wires, np.empty(k, np.uint32)))
            secs = np.concatenate((secs, np.empty(k, np.uint32)))
            fracs = np.concatenate((fracs, np.empty(k, np.uint32)))
        offs[k] = off + PCAP_RECORD_HLEN
        caps[k] = c
        wires[k] = w
        secs[k] = s
        fracs[k] = f
        k += 1
        off += PCAP_RECORD_HLEN + int(c)
    if err == WALK_OK and off != n:
        err = WALK_TRUNCATED
    return offs[:k], caps[:k], wires[:k], secs[:k], fracs[:k], off, err


@numba.njit(cache=True)
def rd32(buf, off, big):  # pragma: no cover - jitted
    if big:
        return (np.uint32(buf[off]) << 24) | (np.uint32(buf[off + 1]) << 16) | (np.uint32(buf[off + 2]) << 8) | np.uint32(buf[off + 3])
    return np.uint32(buf[off]) | (np.uint32(buf[off + 1]) << 8) | (np.uint32(buf[off + 2]) << 16) | (np.uint32(buf[off + 3]) << 24)


@numba.njit(cache=True)
def walk_pcapng(buf: np.ndarray, big: bool):  # pragma: no cover - jitted
    """Block walk of a pcapng file.

    Returns per packet (offset, caplen, wirelen, ts_raw, idb_global_index), the
    offsets of every Interface Description Block, the end offset and why the walk ended (WALK_*).
    """
    n = buf.shape[0]
    cap = max(16, n // 64)
    offs = np.empty(cap, np.int64)
    caps = np.empty(cap, np.uint32)
    wires = np.empty(cap, np.uint32)
    tss = np.empty(cap, np.uint64)
    ifs = np.empty(cap, np.int64)
    idbs = np.empty(64, np.int64)
    nidb = 0
    section_base = 0
    k = 0
    off = 0
    err = WALK_OK
    while off + 12 <= n:
        btype = rd32(buf, off, big)
        blen = rd32(buf, off + 4, big)
        if btype == PCAPNG_SHB:
            magic = rd32(buf, off + 8, big)
            if magic != PCAPNG_BYTE_ORDER_MAGIC:
                err = WALK_BYTE_ORDER
                break
            section_base = nidb
        if blen < 12 or (blen % 4) != 0 or blen > PCAPNG_MAX_BLOCK:
            err = WALK_CORRUPT
            break
        if off + blen > n:
            err = WALK_TRUNCATED
            break
        # every block type's fixed fields must fit in the block: no read past its end
        if (btype == PCAPNG_SHB and blen < 28) or (btype == PCAPNG_IDB and blen < 20) or \
                ((btype == PCAPNG_EPB or btype == PCAPNG_OPB) and blen < 32) or (btype == PCAPNG_SPB and blen < 16):
            err = WALK_CORRUPT
            break
        if btype == PCAPNG_IDB:
            if nidb == idbs.shape[0]:
                idbs = np.concatenate((idbs, np.empty(nidb, np.int64)))
            idbs[nidb] = off
            nidb += 1
        elif btype == PCAPNG_EPB or btype == PCAPNG_OPB or btype == PCAPNG_SPB:
            if k == offs.shape[0]:
                offs = np.concatenate((offs, np.empty(k, np.int64)))
                caps = np.concatenate((caps, np.empty(k, np.uint32)))
                wires = np.concatenate((wires, np.empty(k, np.uint32)))
                tss = np.concatenate((tss, np.empty(k, np.uint64)))
                ifs = np.concatenate((ifs, np.empty(k, np.int64)))
            if btype == PCAPNG_SPB:  # Simple Packet Block: no interface id, no timestamp
                w = rd32(buf, off + 8, big)
                c = min(w, np.uint32(blen - 16))
                offs[k] = off + 12
                ifs[k] = section_base
                tss[k] = 0
            else:
                if btype == PCAPNG_EPB:
                    iface = rd32(buf, off + 8, big)
                else:  # obsolete Packet Block: 16-bit interface id + drops count
                    iface = (rd32(buf, off + 8, big) >> 16) if big else (rd32(buf, off + 8, big) & 0xFFFF)
                hi = np.uint64(rd32(buf, off + 12, big))
                lo = np.uint64(rd32(buf, off + 16, big))
                c = rd32(buf, off + 20, big)
                w = rd32(buf, off + 24, big)
                if c > blen - 32:
                    err = WALK_CORRUPT
                    break
                offs[k] = off + 28
                ifs[k] = section_base + iface
                tss[k] = (hi << np.uint64(32)) | lo
            caps[k] = c
            wires[k] = w
            k += 1
        off += blen
    if err == WALK_OK and off != n:
        err = WALK_TRUNCATED
    return offs[:k], caps[:k], wires[:k], tss[:k], ifs[:k], idbs[:nidb], off, err
