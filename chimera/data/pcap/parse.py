"""The header parse: L2 to L4 of every frame, in one compiled pass that touches each frame's bytes once."""

from __future__ import annotations

import numba
import numpy as np

from chimera.data.pcap.constants import (AF_INET, AF_INET6, C_HDLC_HLEN, ETH_HLEN, ETH_P_8021AD, ETH_P_8021Q,
                                         ETH_P_IP, ETH_P_IPV6, IP_MF, IP_OFFSET, IPPROTO_AH, IPPROTO_DSTOPTS,
                                         IPPROTO_FRAGMENT, IPPROTO_HOPOPTS, IPPROTO_ROUTING, IPPROTO_TCP, IPPROTO_UDP,
                                         IPV4_MIN_HLEN, IPV6_EXT_MIN, IPV6_HLEN, IPV6_MAX_EXTENSIONS, LINKTYPE_C_HDLC,
                                         LINKTYPE_ETHERNET, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL,
                                         LINKTYPE_LINUX_SLL2, LINKTYPE_NULL, LINKTYPE_PPP, MAX_VLAN_TAGS, NULL_HLEN,
                                         PPP_HDLC_ADDRESS, PPP_HDLC_CONTROL, PPP_IP, PPP_IPV6, PPP_PROTO_LEN,
                                         SLL2_HLEN, SLL_HLEN, ST_BAD_IP, ST_EMPTY, ST_FRAGMENT, ST_NON_IP, ST_OK,
                                         ST_TRUNCATED, TCP_FLAGS_OFF, TCP_MIN_HLEN, UDP_HLEN, VLAN_HLEN)

AF_INET6_A, AF_INET6_B, AF_INET6_C = AF_INET6


@numba.njit(cache=True, inline="always")
def _u16(buf, p):  # pragma: no cover - jitted
    return (np.uint16(buf[p]) << 8) | np.uint16(buf[p + 1])


@numba.njit(cache=True, inline="always")
def _is_v6_extension(nh):  # pragma: no cover - jitted
    return (nh == IPPROTO_HOPOPTS or nh == IPPROTO_ROUTING or nh == IPPROTO_FRAGMENT or nh == IPPROTO_AH
            or nh == IPPROTO_DSTOPTS)


@numba.njit(cache=True)
def _parse(buf, offset, caplen, linktype, status, ethertype, vlan, l3_off, ip_version, ip_len, ttl, proto,
           src, dst, src4, dst4, sport, dport, tcp_flags):  # pragma: no cover - jitted
    """Parse L2-L4 headers of every frame; each frame's bytes are touched once."""
    for i in range(offset.shape[0]):
        o = offset[i]
        c = np.int64(caplen[i])
        lt = linktype[i]
        status[i] = ST_NON_IP  # until proven otherwise
        if c == 0:
            status[i] = ST_EMPTY
            continue
        # ---- L2: the EtherType of the L3 payload and where it starts
        et = 0
        l3 = 0
        if lt == LINKTYPE_ETHERNET:
            if c < ETH_HLEN:
                status[i] = ST_TRUNCATED
                continue
            et = _u16(buf, o + 12)
            l3 = ETH_HLEN
            tags = 0
            while (et == ETH_P_8021Q or et == ETH_P_8021AD) and tags < MAX_VLAN_TAGS:
                if c < l3 + VLAN_HLEN:
                    break
                vlan[i] = True
                et = _u16(buf, o + l3 + 2)
                l3 += VLAN_HLEN
                tags += 1
            if et == ETH_P_8021Q or et == ETH_P_8021AD:  # cut inside a tag, or deeper than QinQ
                status[i] = ST_TRUNCATED if c < l3 + VLAN_HLEN else ST_NON_IP
                continue
        elif lt == LINKTYPE_PPP:  # with or without HDLC-like framing (FF 03)
            l3 = 2 if c >= 2 and buf[o] == PPP_HDLC_ADDRESS and buf[o + 1] == PPP_HDLC_CONTROL else 0
            if c < l3 + PPP_PROTO_LEN:
                status[i] = ST_TRUNCATED
                continue
            pp = _u16(buf, o + l3)
            et = ETH_P_IP if pp == PPP_IP else (ETH_P_IPV6 if pp == PPP_IPV6 else 0)
            l3 += PPP_PROTO_LEN
        elif lt == LINKTYPE_C_HDLC:  # address, control, EtherType
            if c < C_HDLC_HLEN:
                status[i] = ST_TRUNCATED
                continue
            et = _u16(buf, o + 2)
            l3 = C_HDLC_HLEN
        elif lt == LINKTYPE_IPV4:
            et = ETH_P_IP
        elif lt == LINKTYPE_IPV6:
            et = ETH_P_IPV6
        elif lt == LINKTYPE_LINUX_SLL:
            if c < SLL_HLEN:
                status[i] = ST_TRUNCATED
                continue
            et = _u16(buf, o + 14)
            l3 = SLL_HLEN
        elif lt == LINKTYPE_LINUX_SLL2:
            if c < SLL2_HLEN:
                status[i] = ST_TRUNCATED
                continue
            et = _u16(buf, o)
            l3 = SLL2_HLEN
        elif lt == LINKTYPE_NULL:  # the address family, in the host's byte order: either end byte holds it
            if c < NULL_HLEN:
                status[i] = ST_TRUNCATED
                continue
            fam = np.uint32(buf[o]) | np.uint32(buf[o + 3])
            et = ETH_P_IP if fam == AF_INET else (
                ETH_P_IPV6 if fam == AF_INET6_A or fam == AF_INET6_B or fam == AF_INET6_C else 0)
            l3 = NULL_HLEN
        else:  # raw IP: the version nibble says which
            v = buf[o] >> 4
            et = ETH_P_IP if v == 4 else (ETH_P_IPV6 if v == 6 else 0)
        ethertype[i] = et
        l3_off[i] = l3
        b = o + l3
        avail = c - l3
        l4 = 0
        frag = False
        # ---- L3
        if et == ETH_P_IP:
            if avail < IPV4_MIN_HLEN:
                status[i] = ST_TRUNCATED
                continue
            ihl = np.int64(buf[b] & 0x0F) * 4
            if (buf[b] >> 4) != 4 or ihl < IPV4_MIN_HLEN:
                status[i] = ST_BAD_IP
                continue
            if avail < ihl:
                status[i] = ST_TRUNCATED
                continue
            ip_version[i] = 4
            tl = _u16(buf, b + 2)
            ip_len[i] = tl
            ttl[i] = buf[b + 8]
            proto[i] = buf[b + 9]
            s4 = np.uint32(0)
            d4 = np.uint32(0)
            for k in range(4):  # IPv4-mapped IPv6 (::ffff:a.b.c.d): one key space with IPv6
                src[i, 12 + k] = buf[b + 12 + k]
                dst[i, 12 + k] = buf[b + 16 + k]
                s4 = (s4 << 8) | np.uint32(buf[b + 12 + k])
                d4 = (d4 << 8) | np.uint32(buf[b + 16 + k])
            src[i, 10] = 0xFF
            src[i, 11] = 0xFF
            dst[i, 10] = 0xFF
            dst[i, 11] = 0xFF
            src4[i] = s4
            dst4[i] = d4
            if tl < ihl:
                status[i] = ST_BAD_IP
                continue
            ff = _u16(buf, b + 6)
            frag = (ff & IP_MF) != 0 or (ff & IP_OFFSET) != 0
            l4 = ihl
        elif et == ETH_P_IPV6:
            if avail < IPV6_HLEN:
                status[i] = ST_TRUNCATED
                continue
            if (buf[b] >> 4) != 6:
                status[i] = ST_BAD_IP
                continue
            ip_version[i] = 6
            ip_len[i] = min(np.int64(_u16(buf, b + 4)) + IPV6_HLEN, 0xFFFF)
            ttl[i] = buf[b + 7]
            for k in range(16):
                src[i, k] = buf[b + 8 + k]
                dst[i, k] = buf[b + 24 + k]
            # walk the extension headers to the transport header
            nh = buf[b + 6]
            l4 = IPV6_HLEN
            cut = False
            for _ in range(IPV6_MAX_EXTENSIONS):
                if not _is_v6_extension(nh):
                    break
                if avail < l4 + IPV6_EXT_MIN:
                    cut = True
                    break
                if nh == IPPROTO_FRAGMENT:
                    fo = _u16(buf, b + l4 + 2)
                    if (fo >> 3) != 0 or (fo & 1) != 0:  # an offset, or more fragments
                        frag = True
                    ext = IPV6_EXT_MIN
                elif nh == IPPROTO_AH:  # its length is in 4-byte units, less 2
                    ext = (np.int64(buf[b + l4 + 1]) + 2) * 4
                else:  # in 8-byte units, less 1
                    ext = (np.int64(buf[b + l4 + 1]) + 1) * 8
                nh = buf[b + l4]
                l4 += ext
            if cut or avail < l4:
                status[i] = ST_TRUNCATED
                continue
            proto[i] = nh
        else:
            continue
        if frag:
            status[i] = ST_FRAGMENT
            continue
        # ---- L4
        p4 = b + l4
        a4 = avail - l4
        pr = proto[i]
        if pr == IPPROTO_TCP or pr == IPPROTO_UDP:
            if a4 < (TCP_MIN_HLEN if pr == IPPROTO_TCP else UDP_HLEN):
                status[i] = ST_TRUNCATED
                continue
            sport[i] = _u16(buf, p4)
            dport[i] = _u16(buf, p4 + 2)
            if pr == IPPROTO_TCP:
                tcp_flags[i] = buf[p4 + TCP_FLAGS_OFF]
        status[i] = ST_OK


def parse_frames(data: np.ndarray, offset: np.ndarray, caplen: np.ndarray,
                 linktype: np.ndarray) -> dict[str, np.ndarray]:
    """Parse L2-L4 headers of the frames at ``offset`` in ``data`` into columns."""
    n = offset.shape[0]
    cols: dict[str, np.ndarray] = dict(status=np.zeros(n, np.uint8), ethertype=np.zeros(n, np.uint16), vlan=np.zeros(n, bool),
                l3_off=np.zeros(n, np.uint16), ip_version=np.zeros(n, np.uint8), ip_len=np.zeros(n, np.uint16),
                ttl=np.zeros(n, np.uint8), proto=np.zeros(n, np.uint8), src=np.zeros((n, 16), np.uint8),
                dst=np.zeros((n, 16), np.uint8), src4=np.zeros(n, np.uint32), dst4=np.zeros(n, np.uint32),
                sport=np.zeros(n, np.uint16), dport=np.zeros(n, np.uint16), tcp_flags=np.zeros(n, np.uint8))
    if n:
        _parse(data, offset, caplen, linktype, *cols.values())
    return cols
