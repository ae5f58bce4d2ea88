"""Ingest: compared field by field with dpkt (an independent reader), and every bad input."""

from __future__ import annotations

import struct
from pathlib import Path

import dpkt
import numpy as np
import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, CookedLinux, Dot1Q, Ether
from scapy.utils import PcapNgWriter, wrpcap

from chimera.data.pcap import ParseStatus, read_pcap
from chimera.errors import PcapError

from builders import STRESS_PCAP


def dpkt_fields(path: Path) -> list[tuple]:
    """(ts_ns, caplen, ip_len, proto, src, dst, sport, dport, flags) via dpkt; None for non-IPv4."""
    out = []
    with open(path, "rb") as fh:
        rd = dpkt.pcap.UniversalReader(fh)
        for ts, buf in rd:
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP):
                out.append(None)
                continue
            l4 = ip.data
            sp = dp = fl = 0
            if isinstance(l4, (dpkt.tcp.TCP, dpkt.udp.UDP)):
                sp, dp = l4.sport, l4.dport
                fl = l4.flags if isinstance(l4, dpkt.tcp.TCP) else 0
            out.append((len(buf), ip.len, ip.p, int.from_bytes(ip.src, "big"),
                        int.from_bytes(ip.dst, "big"), sp, dp, fl))
    return out


def ours(path: Path) -> list[tuple]:
    t = read_pcap(path)
    return [None if t.ip_version[i] != 4 else
            (int(t.caplen[i]), int(t.ip_len[i]), int(t.proto[i]), int(t.src4[i]), int(t.dst4[i]),
             int(t.sport[i]), int(t.dport[i]), int(t.tcp_flags[i])) for i in range(len(t))]


def test_real_sample_matches_dpkt(sample_dir: Path) -> None:
    files = sorted(sample_dir.rglob("*.pcap"))
    assert len(files) == 15
    for f in files:
        assert ours(f) == dpkt_fields(f), f


def test_synthetic_matches_dpkt_and_timestamps(synth_small: Path) -> None:
    f = synth_small / "packets.pcap"
    assert ours(f) == dpkt_fields(f)
    t = read_pcap(f)
    with open(f, "rb") as fh:
        rd = dpkt.pcap.Reader(fh)
        ts = [int(x * 10**9) for x, _ in rd]  # dpkt gives exact Decimals for ns pcaps
    assert t.ts_ns.tolist() == ts


MIXED = [
    Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1234, dport=80, flags="S"),
    Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / UDP(sport=53, dport=5353) / (b"x" * 30),
    Ether() / ARP(),
    Ether() / IPv6(src="fe80::1", dst="fe80::2") / UDP(sport=546, dport=547),
    Ether() / IP(src="10.0.0.1", dst="10.0.0.3", flags="MF", frag=0) / UDP() / (b"y" * 100),
    Ether() / IP(src="10.0.0.1", dst="10.0.0.3", frag=10) / (b"z" * 40),
    Ether() / Dot1Q(vlan=7) / IP(src="10.0.0.9", dst="10.0.0.8") / TCP(sport=1, dport=2, flags="PA"),
    Ether() / IP(src="10.0.0.1", dst="10.0.0.4") / ICMP(),
    Ether() / IP(src="10.0.0.1", dst="10.0.0.5") / TCP(sport=7, dport=8) / (b"j" * 8000),  # jumbo
]


def test_mixed_frames_statuses(tmp_path: Path) -> None:
    p = tmp_path / "mixed.pcap"
    wrpcap(str(p), MIXED)
    t = read_pcap(p)
    S = ParseStatus
    assert list(t.status) == [S.OK, S.OK, S.NON_IP, S.OK, S.FRAGMENT, S.FRAGMENT, S.OK, S.OK, S.OK]
    assert t.ip_version.tolist() == [4, 4, 0, 6, 4, 4, 4, 4, 4]
    assert t.tcp_flags[0] == 0x02 and t.tcp_flags[6] == 0x18
    assert bool(t.vlan[6]) and t.sport[6] == 1 and t.ethertype[6] == 0x0800
    assert t.sport[3] == 546 and t.dport[3] == 547 and t.proto[3] == 17
    assert t.sport[4] == 0  # a fragment has no ports for us
    assert t.ip_len[8] == 20 + 20 + 8000 and t.caplen[8] == 14 + 8040


def test_pcapng_matches_pcap(tmp_path: Path) -> None:
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcapng"
    pkts = [p.copy() for p in MIXED]
    for i, p in enumerate(pkts):
        p.time = 1_700_000_000 + i  # whole seconds: both formats store them exactly
    wrpcap(str(a), pkts)
    w = PcapNgWriter(str(b))
    for pkt in pkts:
        w.write(pkt)
    w.close()
    ta, tb = read_pcap(a), read_pcap(b)
    for col in ("status", "ip_len", "proto", "sport", "dport", "tcp_flags", "src4", "caplen"):
        assert np.array_equal(getattr(ta, col), getattr(tb, col)), col
    assert np.array_equal(ta.ts_ns, tb.ts_ns)


def _write_dpkt(path: Path, frames: list[bytes], linktype: int) -> None:
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=linktype)
        for i, f in enumerate(frames):
            w.writepkt(f, ts=1.0 + i)


def test_linux_cooked_and_raw_ip(tmp_path: Path) -> None:
    ip = IP(src="1.2.3.4", dst="5.6.7.8") / TCP(sport=10, dport=20, flags="SA")
    sll = bytes(CookedLinux(proto=0x0800) / ip)
    _write_dpkt(tmp_path / "sll.pcap", [sll], 113)
    _write_dpkt(tmp_path / "raw.pcap", [bytes(ip)], 101)
    sll2 = struct.pack("!HHIHBB8s", 0x0800, 0, 2, 1, 0, 6, b"\0" * 8) + bytes(ip)
    _write_dpkt(tmp_path / "sll2.pcap", [sll2], 276)
    for name in ("sll", "raw", "sll2"):
        t = read_pcap(tmp_path / f"{name}.pcap")
        assert t.status[0] == ParseStatus.OK, name
        assert (t.sport[0], t.dport[0], t.tcp_flags[0], t.src4[0]) == (10, 20, 0x12, 0x01020304), name


def test_big_endian_and_microsecond_headers(tmp_path: Path) -> None:
    frame = bytes(Ether() / IP() / UDP(sport=5, dport=6))
    be = tmp_path / "be.pcap"
    with open(be, "wb") as fh:
        fh.write(struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        fh.write(struct.pack(">IIII", 100, 250, len(frame), len(frame)) + frame)
    t = read_pcap(be)
    assert t.ts_ns[0] == 100 * 10**9 + 250_000 and t.sport[0] == 5


def test_truncated_tail_is_counted_not_fatal(tmp_path: Path) -> None:
    src = STRESS_PCAP
    data = src.read_bytes()
    p = tmp_path / "cut.pcap"
    p.write_bytes(data[: len(data) - 37])
    t, full = read_pcap(p), read_pcap(src)
    assert len(t) == len(full) - 1 and t.truncated_records == 1


def test_truncated_headers_inside_frames(tmp_path: Path) -> None:
    pkts = [Ether() / IP() / TCP(), Ether() / IP() / UDP()]
    p = tmp_path / "snap.pcap"
    with open(p, "wb") as fh:
        w = dpkt.pcap.Writer(fh)
        for pk in pkts:
            w.writepkt(bytes(pk)[:14 + 20 + 6], ts=1.0)  # snapped inside the L4 header
        w.writepkt(bytes(Ether() / IP())[:20], ts=2.0)   # inside the IP header
        w.writepkt(b"", ts=3.0)                           # zero-length frame
    t = read_pcap(p)
    assert t.status.tolist() == [ParseStatus.TRUNCATED] * 3 + [ParseStatus.EMPTY]


@pytest.mark.parametrize("content, match", [
    (b"", "empty file"),
    (b"hello world, not a capture file at all", "not a pcap or pcapng"),
    (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 147), "unsupported link type 147"),
    (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1) + struct.pack("<IIII", 1, 0, 10**7, 10**7),
     "corrupt record header"),
])
def test_bad_files_name_file_and_problem(tmp_path: Path, content: bytes, match: str) -> None:
    p = tmp_path / "bad.pcap"
    p.write_bytes(content)
    with pytest.raises(PcapError, match=match) as ei:
        read_pcap(p)
    assert str(p) in str(ei.value) and "fix:" in str(ei.value)


def test_wrong_path_and_directory(tmp_path: Path) -> None:
    with pytest.raises(PcapError, match="no such file"):
        read_pcap(tmp_path / "nope.pcap")
    with pytest.raises(PcapError, match="is a directory"):
        read_pcap(tmp_path)


def test_header_only_file_is_empty_table(tmp_path: Path) -> None:
    p = tmp_path / "hdr.pcap"
    p.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    assert len(read_pcap(p)) == 0


@pytest.mark.parametrize("linktype, head", [
    (228, b""),                          # raw IPv4
    (9, b"\xff\x03\x00\x21"),            # PPP in HDLC-like framing
    (9, b"\x00\x21"),                    # PPP without framing
    (104, b"\x0f\x00\x08\x00"),          # Cisco HDLC
])
def test_more_link_types(tmp_path: Path, linktype: int, head: bytes) -> None:
    ip = bytes(IP(src="1.2.3.4", dst="5.6.7.8") / UDP(sport=53, dport=5353))
    _write_dpkt(tmp_path / "x.pcap", [head + ip], linktype)
    t = read_pcap(tmp_path / "x.pcap")
    assert t.status[0] == ParseStatus.OK and t.ip_version[0] == 4
    assert (t.sport[0], t.dport[0], t.src4[0]) == (53, 5353, 0x01020304)


def test_raw_ipv6_link_type(tmp_path: Path) -> None:
    _write_dpkt(tmp_path / "x.pcap", [bytes(IPv6(src="::1", dst="::2") / TCP(sport=9, dport=10))], 229)
    t = read_pcap(tmp_path / "x.pcap")
    assert t.status[0] == ParseStatus.OK and t.ip_version[0] == 6 and t.sport[0] == 9


def test_qinq_reaches_ip(tmp_path: Path) -> None:
    p = tmp_path / "qinq.pcap"
    wrpcap(str(p), [Ether(type=0x88A8) / Dot1Q(vlan=100) / Dot1Q(vlan=7) / IP(src="10.0.0.1", dst="10.0.0.2")
                    / UDP(sport=1, dport=2)])
    t = read_pcap(p)
    assert t.status[0] == ParseStatus.OK and t.l3_off[0] == 22 and bool(t.vlan[0]) and t.dport[0] == 2


def test_ipv6_extension_headers_are_walked(tmp_path: Path) -> None:
    from scapy.layers.inet6 import IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
    p = tmp_path / "v6.pcap"
    wrpcap(str(p), [
        Ether() / IPv6(src="::1", dst="::2") / IPv6ExtHdrHopByHop() / TCP(sport=80, dport=81, flags="S"),
        Ether() / IPv6(src="::1", dst="::2") / IPv6ExtHdrFragment(offset=0, m=1) / UDP(sport=1, dport=2) / bytes(64),
        Ether() / IPv6(src="::1", dst="::2") / IPv6ExtHdrFragment(offset=5, m=0, nh=17) / bytes(40),
    ])
    t = read_pcap(p)
    assert t.status.tolist() == [ParseStatus.OK, ParseStatus.FRAGMENT, ParseStatus.FRAGMENT]
    assert (t.proto[0], t.sport[0], t.dport[0], t.tcp_flags[0]) == (6, 80, 81, 0x02)
    assert t.sport[1] == 0  # a fragment has no ports for us, as for IPv4


def test_corrupt_capture_yields_its_readable_prefix(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = STRESS_PCAP.read_bytes()
    p = tmp_path / "corrupt.pcap"
    full = read_pcap(STRESS_PCAP)
    cut = int(full.offset[10]) - 16  # the 11th record header
    p.write_bytes(data[:cut] + struct.pack("<IIII", 1, 0, 10**7, 10**7) + data[cut + 16:])
    t = read_pcap(p)
    assert len(t) == 10 and t.corrupt and "the 10 frames before it are kept" in t.corrupt[0]
    assert "corrupt record header" in caplog.text


def test_pcapng_short_simple_packet_block_is_corrupt_not_a_frame(tmp_path: Path) -> None:
    shb = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 65535, 20)
    epb_frame = bytes(Ether() / IP() / UDP())
    pad = (-len(epb_frame)) % 4
    epb_len = 32 + len(epb_frame) + pad
    epb = struct.pack("<IIIIIII", 6, epb_len, 0, 0, 0, len(epb_frame), len(epb_frame)) + epb_frame + bytes(pad) + \
        struct.pack("<I", epb_len)
    spb12 = struct.pack("<III", 3, 12, 12)  # a Simple Packet Block too short to hold its length field
    p = tmp_path / "x.pcapng"
    p.write_bytes(shb + idb + epb + spb12)
    t = read_pcap(p)
    assert len(t) == 1 and t.corrupt  # the one real frame; no phantom frame from the 12-byte block


def test_replay_snap_preserves_every_field_and_verdict(tmp_path: Path) -> None:
    """Coalesced frames up to 65,549 bytes, cut to the replay snap: every parsed field but the frame's own lengths
    is the same, and so is every verdict and register of the reference (docs/pipeline.md, "Frame length")."""
    from chimera.data.pcapwrite import normalized_frames, write_pcap
    from chimera.formats.snap import REPLAY_SNAP, snap
    from chimera.reference.pipeline import run_reference

    from builders import COALESCED_PCAP, quickstart_artifact
    whole = read_pcap(COALESCED_PCAP)
    frames, cut = snap(normalized_frames(whole, np.arange(len(whole))))
    assert int(cut.sum()) == int(np.sum(whole.caplen > REPLAY_SNAP)) > 20
    assert max(len(f) for f in frames) == REPLAY_SNAP
    write_pcap(tmp_path / "cut.pcap", frames, whole.ts_ns)
    short = read_pcap(tmp_path / "cut.pcap")
    for c in whole.COLUMNS:
        if c not in ("caplen", "wirelen", "offset"):
            assert np.array_equal(getattr(whole, c), getattr(short, c)), c
    art = quickstart_artifact().art
    (a, sa), (b, sb) = run_reference(art, whole), run_reference(art, short)
    for f in ("label", "flags", "score", "rule_id", "centroid"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert np.array_equal(sa.ema, sb.ema) and np.array_equal(sa.sample, sb.sample)
