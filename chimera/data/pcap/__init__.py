"""Columnar pcap/pcapng ingest.

Reading a capture is two steps: a numba-compiled walk over the record (or
block) headers that yields each frame's offset, lengths and timestamp
(``walk``), then a compiled parse that pulls every header field of every frame
into numpy columns (``parse``). No per-packet Python objects are made, which is
what makes it >1 M packets/s (``invoke bench --what ingest`` measures it against
dpkt). ``files`` reads the pcap and pcapng headers; ``table`` is the result;
``constants`` names every number they use.

Link types handled: Ethernet (with up to two 802.1Q/802.1ad tags: QinQ), Linux
cooked (SLL and SLL2), raw IP (12, 14, 101; 228 IPv4, 229 IPv6), PPP (9, with or
without HDLC framing), Cisco HDLC (104) and BSD loopback/NULL. IPv6 extension
headers are walked to the transport header (a fragment header makes the packet a
FRAGMENT, as for IPv4). Anything the parser cannot read is *counted* in
``PacketTable.status``, never dropped; a capture that is corrupt part-way yields
its readable prefix with a warning.
"""

from chimera.data.pcap.constants import (ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6, IPPROTO_ICMP, IPPROTO_TCP,
                                         IPPROTO_UDP, LINKTYPE_C_HDLC, LINKTYPE_ETHERNET, LINKTYPE_HINT,
                                         LINKTYPE_IPV4, LINKTYPE_IPV6, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2,
                                         LINKTYPE_NULL, LINKTYPE_PPP, LINKTYPE_RAW, LINKTYPE_RAW_ALT, MAX_SANE_CAPLEN,
                                         SUPPORTED_LINKTYPES, ParseStatus)
from chimera.data.pcap.files import RawCapture, read_pcap, read_raw
from chimera.data.pcap.parse import parse_frames
from chimera.data.pcap.table import PacketTable, format_addresses

__all__ = ["ETH_P_8021AD", "ETH_P_8021Q", "ETH_P_IP", "ETH_P_IPV6", "IPPROTO_ICMP", "IPPROTO_TCP", "IPPROTO_UDP",
           "LINKTYPE_C_HDLC", "LINKTYPE_ETHERNET", "LINKTYPE_HINT", "LINKTYPE_IPV4", "LINKTYPE_IPV6",
           "LINKTYPE_LINUX_SLL", "LINKTYPE_LINUX_SLL2", "LINKTYPE_NULL", "LINKTYPE_PPP", "LINKTYPE_RAW",
           "LINKTYPE_RAW_ALT", "MAX_SANE_CAPLEN", "SUPPORTED_LINKTYPES", "PacketTable", "ParseStatus", "RawCapture",
           "format_addresses", "parse_frames", "read_pcap", "read_raw"]
