"""The fuzzer's frames: what each is made of (``FrameSpec``, readable in a shrunk failure), built with scapy.

Frames aim at the corners where parsers differ: IHL below 5 and up to 15 (with the options it announces, or
cut short), a total length that lies, fragments, truncation inside any header, VLAN and QinQ tags, IPv6 and
other EtherTypes (the verdict's and the shim's own among them), IPv4 with no L4 header at all. MAC addresses
are always given (scapy would otherwise resolve them, which can send ARP on the host).
"""

from __future__ import annotations

import functools
import socket
import struct
from dataclasses import dataclass, replace
from typing import Any

from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

SRC_MAC, DST_MAC = "02:00:00:00:f0:01", "02:00:00:00:f0:02"
KINDS = ("ipv4", "vlan", "qinq", "ipv6", "non_ip")
#: EtherTypes of non-IP frames: ARP, LLDP, an 802.3 length, IPv6 under the wrong type, the verdict's, the shim's
ODD_ETHERTYPES = (0x0806, 0x88CC, 0x0040, 0x86DD, 0x88B5, 0x88B6, 0x9000)
MF = 0x2000  # the IPv4 "more fragments" bit, as the flags/offset word carries it


def ip4(addr: int) -> str:
    return socket.inet_ntoa(struct.pack("!I", addr & 0xFFFFFFFF))


@dataclass(frozen=True)
class FrameSpec:
    """One frame. The defaults make a well-formed IPv4/TCP frame; every field is a way to bend it."""

    kind: str = "ipv4"          # ipv4 | vlan (one 802.1Q tag) | qinq (802.1ad + 802.1Q) | ipv6 | non_ip
    ethertype: int = 0x0800     # non_ip: the EtherType (or an 802.3 length)
    src: int = 0x0A000001
    dst: int = 0x0A000002
    proto: int = 6
    sport: int = 1000
    dport: int = 80
    tcp_flags: int = 0x10
    ihl: int = 5                # 0..15; below 5 is malformed; above 5 carries (ihl - 5) * 4 bytes of options
    version: int = 4
    ip_len: int | None = None   # the total length field; None: the true length
    frag: int = 0               # the flags/offset word's low 14 bits (MF | offset): non-zero is a fragment
    payload: int = 0            # bytes after the L4 header
    l4: bool = True             # False: IPv4 with no L4 header (a zero-length TCP/UDP)
    truncate: int = 0           # bytes cut off the end

    def reversed(self) -> "FrameSpec":
        """The same flow's other direction."""
        return replace(self, src=self.dst, dst=self.src, sport=self.dport, dport=self.sport)

    def describe(self) -> str:
        if self.kind == "non_ip":
            return f"non-IP 0x{self.ethertype:04x}"
        bits = [f"{self.kind} {ip4(self.src)}:{self.sport} > {ip4(self.dst)}:{self.dport} proto {self.proto}"]
        if self.proto == 6 and self.l4:
            bits.append(f"flags 0x{self.tcp_flags:02x}")
        bits += [f"{k} {v}" for k, v in (("ihl", self.ihl), ("version", self.version), ("ip_len", self.ip_len),
                                          ("frag", self.frag), ("payload", self.payload), ("truncate", self.truncate))
                 if v != FrameSpec.__dataclass_fields__[k].default]
        if not self.l4:
            bits.append("no L4 header")
        return ", ".join(bits)


def _l4(s: FrameSpec) -> list[Any]:
    if not s.l4:
        return []
    if s.proto == 6:
        return [TCP(sport=s.sport, dport=s.dport, flags=s.tcp_flags)]
    if s.proto == 17:
        return [UDP(sport=s.sport, dport=s.dport)]
    if s.proto == 1:
        return [ICMP()]
    return []


@functools.lru_cache(maxsize=65536)
def build(s: FrameSpec) -> bytes:
    """The frame's bytes (cached: bursts repeat the same frame)."""
    eth = Ether(src=SRC_MAC, dst=DST_MAC)
    if s.kind == "non_ip":
        pkt = Ether(src=SRC_MAC, dst=DST_MAC, type=s.ethertype) / Raw(b"\x00" * max(s.payload, 28))
    else:
        if s.kind == "ipv6":
            l3 = IPv6(src=f"2001:db8::{s.src & 0xFFFF:x}", dst=f"2001:db8::{s.dst & 0xFFFF:x}",
                      nh=s.proto)
        else:
            opts = [IPOption_NOP()] * (max(s.ihl, 5) - 5) * 4
            l3 = IP(version=s.version, ihl=s.ihl, len=s.ip_len, flags=(s.frag >> 13) & 0x7, frag=s.frag & 0x1FFF,
                    proto=s.proto, src=ip4(s.src), dst=ip4(s.dst), options=opts)
        layers = [l3, *_l4(s)]
        if s.payload:
            layers.append(Raw(b"\xab" * s.payload))
        pkt = eth
        if s.kind == "vlan":
            pkt = pkt / Dot1Q(vlan=7)
        elif s.kind == "qinq":
            pkt = Ether(src=SRC_MAC, dst=DST_MAC, type=0x88A8) / Dot1AD(vlan=5) / Dot1Q(vlan=7)
        for layer in layers:
            pkt = pkt / layer
    raw = bytes(pkt)
    cut = min(s.truncate, len(raw) - 14)  # an Ethernet header always stays (the testbed's links need one)
    return raw[: len(raw) - cut] if cut > 0 else raw
