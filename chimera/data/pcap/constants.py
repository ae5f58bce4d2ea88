"""The numbers a capture parser needs, named once: link types, EtherTypes, IP protocols, parse outcomes."""

from __future__ import annotations

import enum

# Link-layer header types (tcpdump.org/linktypes.html).
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_PPP = 9
LINKTYPE_RAW = 101
LINKTYPE_RAW_ALT = (12, 14)
LINKTYPE_C_HDLC = 104
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
SUPPORTED_LINKTYPES = {LINKTYPE_NULL, LINKTYPE_ETHERNET, LINKTYPE_PPP, LINKTYPE_RAW, *LINKTYPE_RAW_ALT,
                       LINKTYPE_C_HDLC, LINKTYPE_LINUX_SLL, LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL2}
LINKTYPE_HINT = ("supported: Ethernet (1), Linux cooked SLL (113) / SLL2 (276), raw IP (12, 14, 101, 228, 229), "
                 "PPP (9), Cisco HDLC (104), NULL (0); convert others with tcprewrite --dlt=enet or editcap -T ether")

ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
MAX_VLAN_TAGS = 2            # 802.1Q, and QinQ's outer 802.1ad

PPP_IP = 0x0021
PPP_IPV6 = 0x0057
PPP_HDLC_ADDRESS, PPP_HDLC_CONTROL = 0xFF, 0x03
AF_INET = 2                  # BSD loopback (NULL): the address family in the first bytes
AF_INET6 = (24, 28, 30)      # NetBSD/OpenBSD, FreeBSD, Darwin

IPPROTO_HOPOPTS = 0
IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ROUTING = 43
IPPROTO_FRAGMENT = 44
IPPROTO_AH = 51
IPPROTO_DSTOPTS = 60
IPV6_MAX_EXTENSIONS = 8      # extension headers walked before giving up

IP_MF = 0x2000               # IPv4 flags/fragment offset word: more fragments
IP_OFFSET = 0x1FFF           # IPv4 fragment offset (8-byte units)

# header lengths (bytes)
ETH_HLEN = 14
VLAN_HLEN = 4
SLL_HLEN = 16
SLL2_HLEN = 20
NULL_HLEN = 4
C_HDLC_HLEN = 4
PPP_PROTO_LEN = 2
IPV4_MIN_HLEN = 20
IPV6_HLEN = 40
IPV6_EXT_MIN = 8
TCP_MIN_HLEN = 20
UDP_HLEN = 8
TCP_FLAGS_OFF = 13

#: Frames larger than this are not believable in any capture we read: a record
#: claiming more is corruption, not a jumbo frame.
MAX_SANE_CAPLEN = 262_144
PCAP_RECORD_HLEN = 16
PCAP_GLOBAL_HLEN = 24
PCAPNG_SHB, PCAPNG_IDB, PCAPNG_OPB, PCAPNG_SPB, PCAPNG_EPB = 0x0A0D0D0A, 1, 2, 3, 6
PCAPNG_BYTE_ORDER_MAGIC = 0x1A2B3C4D
PCAPNG_MAX_BLOCK = 16 * 1024 * 1024


class ParseStatus(enum.IntEnum):
    """Outcome of parsing one frame; every frame gets exactly one."""

    OK = 0            # IPv4 or IPv6 with its L4 header (or a non-TCP/UDP protocol)
    NON_IP = 1        # ARP, LLC, LLDP, ...
    TRUNCATED = 2     # captured bytes end inside the L2/L3/L4 header
    FRAGMENT = 3      # IPv4 or IPv6 fragment (MF set or offset != 0): no ports
    BAD_IP = 4        # version/IHL/total-length nonsense
    EMPTY = 5         # zero captured bytes


# the same outcomes as plain ints, for the compiled parser
ST_OK, ST_NON_IP, ST_TRUNCATED, ST_FRAGMENT, ST_BAD_IP, ST_EMPTY = (int(s) for s in ParseStatus)
