"""Synthetic labelled traffic shaped like PeerRush, CICIoT2022 and ISCXVPN2016.

Each class is a parametric flow process: protocol mix, server ports, flow
length, payload-size mixtures per direction, inter-arrival timing with bursts,
TCP handshakes (SYN with options: 60-byte IP packets) and teardowns. Attacks
(port scan, SYN flood with option-less 40-byte SYNs from spoofed sources, UDP
DoS) are injectable as extra classes, and drift knobs change sizes and timing
over the capture (and the flow arrival rate over a compressed day) for the
stability runs. Everything is drawn from one seeded generator: the same
arguments give byte-identical pcaps.

This is not the real data: it exists so that every stage runs without the
(large, licensed) datasets, and its shape is documented here, not tuned to
reproduce any number of the paper.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from chimera.data.dataset import FORMAT as DATASET_FORMAT
from chimera.data.dataset import TIME_BASE_NS, finish_dataset
from chimera.data.pcapwrite import PCAP_HEADER, write_pcap
from chimera.errors import ConfigError, DatasetError

log = logging.getLogger(__name__)

TCP, UDP = 6, 17
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


@dataclass(frozen=True)
class ClassShape:
    """How flows of one class look. Sizes are payload bytes; times in ms."""

    name: str
    tcp: float                               # share of flows over TCP
    ports: tuple[int, ...]                   # server ports
    pkts_median: float                       # packets per flow (log-normal)
    pkts_sigma: float
    fwd_sizes: tuple[tuple[float, float, float], ...]  # (weight, mean, std) payload mixture client->server
    bwd_sizes: tuple[tuple[float, float, float], ...]
    bwd_share: float                         # share of data packets server->client
    iat_ms: float                            # median inter-arrival (log-normal)
    iat_sigma: float = 1.0
    burst: float = 0.2                       # chance a packet follows the previous within 50-500 µs
    rst_close: float = 0.1                   # chance a TCP flow ends with RST instead of FIN


def _m(*parts: tuple[float, float, float]) -> tuple[tuple[float, float, float], ...]:
    return tuple(parts)


PROFILES: dict[str, list[ClassShape]] = {
    # CICIoT2022-like: states of smart-home devices (boot, idle, streaming, voice, camera)
    "ciciot": [
        ClassShape("POWER", 0.55, (53, 123, 443, 1900, 8080), 8, 0.8, _m((0.6, 40, 15), (0.4, 300, 120)),
                   _m((0.7, 80, 40), (0.3, 600, 300)), 0.5, 30, 1.2, 0.3, 0.2),
        ClassShape("IDLE", 0.7, (443, 4070, 8883), 6, 0.5, _m((1.0, 60, 20),), _m((1.0, 50, 20),), 0.45, 900, 0.6,
                   0.05, 0.05),
        ClassShape("AUDIO_STREAM", 0.9, (443, 4070), 120, 0.6, _m((1.0, 0, 1),), _m((0.8, 1380, 60), (0.2, 400, 200)),
                   0.8, 20, 0.7, 0.35, 0.05),
        ClassShape("VOICE_COMMAND", 0.85, (443,), 40, 0.5, _m((0.7, 640, 120), (0.3, 90, 30)),
                   _m((0.6, 180, 80), (0.4, 900, 300)), 0.4, 12, 0.9, 0.5, 0.1),
        ClassShape("CAMERA", 0.25, (554, 8554, 443), 150, 0.5, _m((0.85, 1200, 150), (0.15, 300, 100)),
                   _m((1.0, 60, 10),), 0.08, 33, 0.3, 0.15, 0.1),
    ],
    # PeerRush-like: P2P applications
    "peerrush": [
        ClassShape("eMule", 0.6, (4662, 4672), 30, 1.0, _m((0.5, 100, 40), (0.5, 1300, 100)),
                   _m((0.5, 120, 50), (0.5, 1300, 100)), 0.5, 60, 1.5, 0.3, 0.2),
        ClassShape("uTorrent", 0.5, (6881, 51413), 40, 1.1, _m((0.6, 70, 20), (0.4, 1400, 40)),
                   _m((0.3, 70, 20), (0.7, 1400, 40)), 0.6, 25, 1.3, 0.4, 0.3),
        ClassShape("Vuze", 0.55, (6880, 49001), 35, 1.0, _m((0.5, 90, 30), (0.5, 1200, 150)),
                   _m((0.4, 90, 30), (0.6, 1250, 150)), 0.55, 40, 1.4, 0.35, 0.25),
        ClassShape("Frostwire", 0.7, (6346, 6347), 25, 0.9, _m((0.7, 300, 150), (0.3, 1000, 200)),
                   _m((0.5, 200, 100), (0.5, 1100, 200)), 0.5, 80, 1.2, 0.2, 0.15),
        ClassShape("Skype", 0.3, (443, 33033), 60, 0.8, _m((1.0, 140, 40),), _m((1.0, 140, 40),), 0.5, 20, 0.5,
                   0.1, 0.05),
    ],
    # ISCXVPN2016-like: application types, each plain and through a VPN (filled in below)
    "iscxvpn": [
        ClassShape("chat", 0.9, (443, 5222), 20, 0.8, _m((1.0, 120, 60),), _m((1.0, 150, 80),), 0.5, 800, 1.2, 0.1,
                   0.05),
        ClassShape("email", 1.0, (993, 465, 587), 30, 0.7, _m((0.6, 80, 30), (0.4, 900, 400)),
                   _m((0.7, 200, 100), (0.3, 1200, 200)), 0.5, 50, 1.0, 0.3, 0.05),
        ClassShape("file", 1.0, (22, 21, 990), 200, 0.6, _m((0.5, 60, 10), (0.5, 1400, 40)),
                   _m((0.5, 60, 10), (0.5, 1400, 40)), 0.5, 2, 0.8, 0.6, 0.05),
        ClassShape("streaming", 0.8, (443, 1935), 300, 0.5, _m((1.0, 80, 30),), _m((0.9, 1380, 50), (0.1, 500, 200)),
                   0.85, 8, 0.9, 0.5, 0.05),
        ClassShape("voip", 0.1, (3478, 16384), 250, 0.4, _m((1.0, 172, 8),), _m((1.0, 172, 8),), 0.5, 20, 0.15,
                   0.02, 0.05),
    ],
}

ATTACKS = ("SCAN", "SYN_FLOOD", "UDP_DOS")
VPN_PORT = 1194
VPN_OVERHEAD = 41


def profile_classes(profile: str, attacks: tuple[str, ...] = ()) -> list[str]:
    """Class names the generator writes for a profile, in label-index order."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown synthetic profile {profile!r}", f"choose one of {sorted(PROFILES)}")
    bad = [a for a in attacks if a not in ATTACKS]
    if bad:
        raise ConfigError(f"unknown attack(s) {bad}", f"choose from {list(ATTACKS)}")
    names = [c.name for c in PROFILES[profile]]
    if profile == "iscxvpn":
        names = [f"{n}" for n in names] + [f"vpn_{n}" for n in names]
    return names + list(attacks)


@dataclass
class SyntheticSpec:
    """Generator knobs. ``drift`` scales sizes/timing linearly up to (1+drift) by the end;
    ``diurnal`` modulates flow arrivals with one compressed day over ``duration_s``.

    ``class_weights_end``: class weights at the end of the capture; a flow's class is then
    drawn with the weights interpolated linearly at its start time (a class mix that drifts).
    ``attack_at_s``: attacks come as one burst starting at this time (the default, None,
    starts each attack at a random time). ``drift_step_at_s``: the drift comes as one step at
    this time (flows starting later get the full 1 + drift) instead of growing linearly.

    ``covariate_tilt``: a pure covariate shift (p(y | x) fixed, p(x) moved), by selection on x alone (Shimodaira,
    J. Stat. Plan. Inference 90(2), 2000): a normal flow starting at fraction r of the capture is kept with
    probability ``keep_probability`` (it reads the flow's packet lengths, never its class; a rejected flow is
    redrawn whole, class included, at the same start time). So p(y | x) is the untilted day's while p(x)
    tilts toward large packets (tilt > 0) or small ones (< 0) as the day goes; p(y) moves too, as a consequence
    of p(x): covariate shift is derived from the selection, not a third knob on the classes.
    """

    profile: str = "ciciot"
    flows: int = 2000
    seed: int = 1
    duration_s: float = 120.0
    attacks: tuple[str, ...] = ()
    attack_share: float = 0.05
    drift: float = 0.0
    diurnal: float = 0.0
    max_packets_per_flow: int = 400
    class_weights: dict[str, float] = field(default_factory=dict)
    class_weights_end: dict[str, float] = field(default_factory=dict)
    attack_at_s: float | None = None
    drift_step_at_s: float | None = None
    covariate_tilt: float = 0.0
    snaplen: int = 0  # 0 = whole frames; else capture at most this many bytes per frame (headers-only traces)


@dataclass
class _Pkts:
    ts: list[np.ndarray] = field(default_factory=list)
    fwd: list[np.ndarray] = field(default_factory=list)   # bool: client->server
    size: list[np.ndarray] = field(default_factory=list)  # payload bytes
    flags: list[np.ndarray] = field(default_factory=list)
    flow: list[np.ndarray] = field(default_factory=list)


def _mixture(rng: np.random.Generator, mix: tuple[tuple[float, float, float], ...], n: int, scale: float) -> np.ndarray:
    w = np.array([m[0] for m in mix])
    comp = rng.choice(len(mix), size=n, p=w / w.sum())
    mean = np.array([m[1] for m in mix])[comp] * scale
    std = np.array([m[2] for m in mix])[comp] * scale
    return np.clip(np.rint(rng.normal(mean, std)), 0, 1400).astype(np.int64)


#: ``keep_probability``'s reference mean IP length (bytes) and the clip of its log2 ratio
COVARIATE_REF_BYTES, COVARIATE_CLIP = 300.0, 2.0


def keep_probability(size: np.ndarray, tilt: float, r: float) -> float:
    """The chance a flow with payload sizes ``size`` (-1: a SYN's option bytes) is kept at fraction ``r`` of the
    capture: exp(tilt * r * (z - 2 sign(tilt))), z = log2(mean IP length / 300) clipped to [-2, 2]; 1 at r = 0,
    and at most 1 for any flow. It reads x only (the lengths), so selection keeps p(y | x)."""
    m = float(np.mean(np.maximum(size, 0))) + 40.0   # IPv4 + TCP headers: a flow's mean IP length, roughly
    z = float(np.clip(np.log2(m / COVARIATE_REF_BYTES), -COVARIATE_CLIP, COVARIATE_CLIP))
    return float(np.exp(tilt * r * (z - COVARIATE_CLIP * np.sign(tilt))))


class _Builder:
    def __init__(self, spec: SyntheticSpec) -> None:
        self.spec = spec
        self.rng = np.random.default_rng(spec.seed)
        self.p = _Pkts()
        self.endpoints: list[tuple[int, int, int, int, int]] = []  # client ip, sport, server ip, dport, proto
        self.labels: list[int] = []
        self.servers = (0x0A640000 + self.rng.integers(1, 4000, size=64)).astype(np.int64)  # 10.100.x.y

    def _start_time(self) -> float:
        s, rng = self.spec, self.rng
        while True:  # rejection sampling of a diurnal arrival density
            t = rng.uniform(0, s.duration_s)
            if rng.uniform() <= 1 - s.diurnal * 0.5 * (1 + np.cos(2 * np.pi * t / s.duration_s)):
                return t

    def _client(self) -> int:
        return int(0xC0A80000 + self.rng.integers(2, 65000))  # 192.168.x.y

    def _add(self, label: int, ep: tuple[int, int, int, int, int], t: np.ndarray, fwd: np.ndarray,
             size: np.ndarray, flags: np.ndarray) -> None:
        fid = len(self.endpoints)
        self.endpoints.append(ep)
        self.labels.append(label)
        self.p.ts.append(t)
        self.p.fwd.append(fwd)
        self.p.size.append(size)
        self.p.flags.append(flags)
        self.p.flow.append(np.full(t.shape[0], fid, np.int64))

    def normal_flow(self, label: int, c: ClassShape, vpn: bool, t0: float | None = None) -> None:
        self._add(label, *self.make_normal(c, vpn, self._start_time() if t0 is None else t0))

    def make_normal(self, c: ClassShape, vpn: bool, t0: float
                    ) -> tuple[tuple[int, int, int, int, int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One flow of class shape ``c`` starting at ``t0``: (endpoints, times, client->server, sizes, flags)."""
        s, rng = self.spec, self.rng
        ramp = t0 / s.duration_s if s.drift_step_at_s is None else float(t0 >= s.drift_step_at_s)
        drift = 1.0 + s.drift * ramp
        tcp = rng.uniform() < c.tcp
        n = int(np.clip(rng.lognormal(np.log(c.pkts_median), c.pkts_sigma), 2, s.max_packets_per_flow))
        iat = rng.lognormal(np.log(c.iat_ms * drift), c.iat_sigma, size=n) * 1e-3
        burst = rng.uniform(size=n) < c.burst
        iat[burst] = rng.uniform(50e-6, 500e-6, size=int(burst.sum()))
        fwd = rng.uniform(size=n) >= c.bwd_share
        size = np.where(fwd, _mixture(rng, c.fwd_sizes, n, drift), _mixture(rng, c.bwd_sizes, n, drift))
        flags = np.where(size > 0, PSH | ACK, ACK) if tcp else np.zeros(n, np.int64)
        if tcp:  # handshake and teardown
            hs_iat = rng.uniform(0.2e-3, 30e-3, size=3)
            iat = np.r_[0.0, hs_iat[:2], iat]
            fwd = np.r_[True, False, True, fwd]
            size = np.r_[-1, -1, 0, size]  # -1: SYN/SYN-ACK carry 20 option bytes, no payload
            flags = np.r_[SYN, SYN | ACK, ACK, flags]
            if rng.uniform() < c.rst_close:
                iat, fwd, size, flags = np.r_[iat, 1e-3], np.r_[fwd, rng.uniform() < 0.5], np.r_[size, 0], np.r_[flags, RST | ACK]
            else:
                iat = np.r_[iat, rng.uniform(1e-3, 50e-3, size=3)]
                fwd = np.r_[fwd, True, False, True]
                size, flags = np.r_[size, 0, 0, 0], np.r_[flags, FIN | ACK, FIN | ACK, ACK]
        else:
            iat[0] = 0.0
        t = t0 + np.cumsum(iat)
        dport = int(rng.choice(c.ports))
        proto = TCP if tcp else UDP
        if vpn:  # everything rides one UDP tunnel to the VPN server: sizes grow, ports hide the app
            proto, dport, flags = UDP, VPN_PORT, np.zeros_like(flags)
            size = np.maximum(size, 0) + VPN_OVERHEAD + (rng.integers(0, 16, size=size.shape) if c.tcp else 0)
        ep = (self._client(), int(rng.integers(32768, 61000)), int(rng.choice(self.servers)), dport, proto)
        return ep, t, fwd, size, flags

    def _attack_start(self) -> float:
        at = self.spec.attack_at_s
        return self._start_time() if at is None else float(at)

    def attack_flows(self, label: int, kind: str, budget: int) -> int:
        """Adds attack flows; returns how many flows were made."""
        _s, rng = self.spec, self.rng
        victim = int(rng.choice(self.servers))
        made = 0
        if kind == "SCAN":  # one scanner probing many ports: 2-packet flows (SYN, RST-ACK)
            scanner, t = self._client(), self._attack_start()
            for _ in range(budget):
                t += rng.exponential(2e-3)
                ep = (scanner, int(rng.integers(40000, 60000)), victim, int(rng.integers(1, 10000)), TCP)
                self._add(label, ep, np.array([t, t + rng.uniform(50e-6, 1e-3)]), np.array([True, False]),
                          np.array([0, 0]), np.array([SYN, RST | ACK]))
                made += 1
        elif kind == "SYN_FLOOD":  # spoofed single SYNs without options: 40-byte IP packets
            t = self._attack_start()
            for _ in range(budget):
                t += rng.exponential(0.5e-3)
                ep = (int(rng.integers(0x0B000000, 0xDF000000)), int(rng.integers(1024, 65535)), victim, 80, TCP)
                self._add(label, ep, np.array([t]), np.array([True]), np.array([-2]), np.array([SYN]))
                made += 1
        elif kind == "UDP_DOS":  # a few sources blasting fixed-size datagrams
            for _ in range(max(1, budget)):
                n = int(rng.integers(50, 200))
                tt = self._attack_start() + np.cumsum(rng.exponential(0.3e-3, size=n))
                ep = (self._client(), int(rng.integers(1024, 65535)), victim, int(rng.choice((53, 123, 80))), UDP)
                self._add(label, ep, tt, np.ones(n, bool), np.full(n, 1200), np.zeros(n, np.int64))
                made += 1
        return made


MAX_HEADER = 14 + 20 + 40  # Ethernet, IPv4, TCP with 20 option bytes
MAC_C, MAC_S = np.frombuffer(bytes.fromhex("02000a000001"), np.uint8), np.frombuffer(bytes.fromhex("02000a000002"), np.uint8)


def _be(col: int, value: np.ndarray | int, width: int, hdr: np.ndarray) -> None:
    """Write ``value`` big-endian into ``width`` bytes of every row of ``hdr`` from column ``col``."""
    v = np.asarray(value, np.uint64)
    for k in range(width):
        hdr[:, col + k] = (v >> np.uint64(8 * (width - 1 - k))) & np.uint64(0xFF)


def _chunk_records(b: _Builder, ttls: np.ndarray, pos: np.ndarray, sel: np.ndarray, flow: np.ndarray,
                   fwd: np.ndarray, size: np.ndarray, flags: np.ndarray, ts_ns: np.ndarray, snaplen: int = 0) -> bytes:
    """pcap records (ns) of packets ``sel`` (in send order; ``pos`` their global send index), built with numpy:
    Ethernet/IPv4/TCP|UDP with valid IPv4 header checksums and zero payloads."""
    ep = np.asarray(b.endpoints, np.int64)[flow[sel]]
    cip, cport, sip, sport, proto = ep.T
    fw = fwd[sel]
    src, dst = np.where(fw, cip, sip), np.where(fw, sip, cip)
    sp, dp = np.where(fw, cport, sport), np.where(fw, sport, cport)
    sz = size[sel]
    tcp = proto == TCP
    opt = np.where(sz == -1, 20, np.where(sz == -2, 0, 12))
    payload = np.maximum(sz, 0)
    l4 = np.where(tcp, 20 + opt, 8)
    hlen = 14 + 20 + l4
    flen = hlen + payload
    n = sel.size
    hdr = np.zeros((n, MAX_HEADER), np.uint8)
    hdr[:, 0:6] = np.where(fw[:, None], MAC_S, MAC_C)
    hdr[:, 6:12] = np.where(fw[:, None], MAC_C, MAC_S)
    hdr[:, 12], hdr[:, 13] = 0x08, 0x00
    ident = pos & 0xFFFF
    ttl = np.where(fw, ttls[flow[sel]], 64)
    total = 20 + l4 + payload
    csum = 0x4500 + total + ident + 0x4000 + ((ttl << 8) | proto) + (src >> 16) + (src & 0xFFFF) + (dst >> 16) \
        + (dst & 0xFFFF)
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = (csum & 0xFFFF) + (csum >> 16)
    hdr[:, 14], hdr[:, 15] = 0x45, 0
    _be(16, total, 2, hdr)
    _be(18, ident, 2, hdr)
    hdr[:, 20], hdr[:, 21] = 0x40, 0
    hdr[:, 22], hdr[:, 23] = ttl, proto
    _be(24, ~csum & 0xFFFF, 2, hdr)
    _be(26, src, 4, hdr)
    _be(30, dst, 4, hdr)
    _be(34, sp, 2, hdr)
    _be(36, dp, 2, hdr)
    _be(38, np.where(tcp, 1000 + pos, 8 + payload) & np.where(tcp, 0xFFFFFFFF, 0xFFFF), 4, hdr)  # seq / (len, csum)
    udp = ~tcp  # UDP: length then a zero checksum in bytes 38-41
    hdr[udp, 38], hdr[udp, 39] = ((8 + payload[udp]) >> 8) & 0xFF, (8 + payload[udp]) & 0xFF
    hdr[udp, 40], hdr[udp, 41] = 0, 0
    hdr[tcp, 46] = (((20 + opt[tcp]) // 4) << 4).astype(np.uint8)
    hdr[tcp, 47] = flags[sel][tcp]
    hdr[tcp, 48], hdr[tcp, 49] = 0xFF, 0xFF
    caplen = np.minimum(flen, snaplen) if snaplen else flen
    rec = 16 + caplen
    off = np.r_[0, np.cumsum(rec)[:-1]]
    buf = np.zeros(int(rec.sum()), np.uint8)
    rh = np.zeros((n, 4), "<u4")
    rh[:, 0], rh[:, 1], rh[:, 2], rh[:, 3] = ts_ns // 1_000_000_000, ts_ns % 1_000_000_000, caplen, flen
    buf[(off[:, None] + np.arange(16)).ravel()] = rh.view(np.uint8).ravel()
    cols = np.arange(MAX_HEADER)
    keep = cols[None, :] < np.minimum(hlen, caplen)[:, None]
    buf[(off[:, None] + 16 + cols[None, :])[keep]] = hdr[keep]
    return buf.tobytes()


def _write_packets(path: Path, b: _Builder, order: np.ndarray, flow: np.ndarray, fwd: np.ndarray, size: np.ndarray,
                   flags: np.ndarray, ts_ns: np.ndarray, chunk: int = 50_000) -> int:
    """Stream the frames, in send order, into a nanosecond Ethernet pcap: one chunk in memory at a time."""
    rng = np.random.default_rng(b.spec.seed + 1)
    ttls = rng.choice((64, 128, 255), size=len(b.endpoints))
    with open(path, "wb") as fh:
        fh.write(PCAP_HEADER)
        for start in range(0, order.size, chunk):
            sel = order[start:start + chunk]
            pos = np.arange(start, start + sel.size, dtype=np.int64)
            fh.write(_chunk_records(b, ttls, pos, sel, flow, fwd, size, flags, ts_ns[start:start + chunk],
                                    b.spec.snaplen))
    return int(order.size)


def generate(spec: SyntheticSpec, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Generate a labelled synthetic dataset (normalized format) into ``out_dir``.

    The frames are written once, streamed in send order, straight into the dataset's packets.pcap (they are
    already untagged Ethernet in time order: nothing to normalize, no second copy).
    """
    if spec.flows < 10:
        raise ConfigError(f"flows={spec.flows} is too few", "ask for at least 10 flows")
    unknown = set(spec.class_weights) | set(spec.class_weights_end)
    unknown -= set(profile_classes(spec.profile))
    if unknown:
        raise ConfigError(f"class weights name classes the {spec.profile} profile does not have: {sorted(unknown)}",
                          f"use names from {profile_classes(spec.profile)}")
    for what, cw in (("class_weights", spec.class_weights), ("class_weights_end", spec.class_weights_end)):
        normal = [n for n in profile_classes(spec.profile) if n not in ATTACKS]
        if any(v < 0 for v in cw.values()) or (cw and sum(cw.get(n, 1.0) for n in normal) <= 0):
            raise ConfigError(f"{what} {cw}: weights must be >= 0 with at least one class above 0",
                              "give non-negative weights (a class not named weighs 1)")
    for what, at in (("attack_at_s", spec.attack_at_s), ("drift_step_at_s", spec.drift_step_at_s)):
        if at is not None and not 0 <= at < spec.duration_s:
            raise ConfigError(f"{what}={at} is outside the capture (0..{spec.duration_s} s)",
                              "give a time inside the capture")
    if abs(spec.covariate_tilt) > 4:
        raise ConfigError(f"covariate_tilt={spec.covariate_tilt} is outside [-4, 4]",
                          "at |tilt| 4 a flow far from the tilted-to lengths is kept once in 10^7 draws by midnight: "
                          "give a smaller tilt")
    if spec.drift < 0:
        raise ConfigError(f"drift={spec.drift} is negative", "give drift >= 0 (the growth of sizes and timings)")
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise DatasetError(f"{out}: already exists; refusing to overwrite it",
                           "pick another --out, or pass --overwrite to replace it")
    classes = profile_classes(spec.profile, tuple(spec.attacks))
    shapes = PROFILES[spec.profile]
    b = _Builder(spec)
    n_attack_total = int(round(spec.flows * spec.attack_share)) if spec.attacks else 0
    n_normal = spec.flows - n_attack_total
    normal_names = classes[: len(classes) - len(spec.attacks)]
    w = np.array([spec.class_weights.get(n, 1.0) for n in normal_names], float)
    # the mix at the end: class_weights_end where set, else the start's (a covariate day alone keeps the mix)
    w_end = np.array([spec.class_weights_end.get(n, 1.0) for n in normal_names], float) if spec.class_weights_end \
        else w

    def weights_at(t: np.ndarray) -> np.ndarray:
        """The class weights at start times ``t`` (rows): the mix drifts linearly where class_weights_end is set."""
        frac = (t / spec.duration_s)[:, None]
        return (1 - frac) * w / w.sum() + frac * w_end / w_end.sum()

    def draw(wt: np.ndarray) -> np.ndarray:
        cum = np.cumsum(wt, axis=1)
        return np.minimum((b.rng.uniform(size=(len(wt), 1)) * cum[:, -1:] > cum).sum(1), len(normal_names) - 1)

    if spec.class_weights_end or spec.covariate_tilt:  # start times first, then each flow's class at its time
        starts = np.array([b._start_time() for _ in range(n_normal)])
        picks = draw(weights_at(starts))
    else:
        starts, picks = None, b.rng.choice(len(normal_names), size=n_normal, p=w / w.sum())
    redrawn = 0
    for i, label in enumerate(tqdm(picks, desc=f"synthetic {spec.profile}", unit="flow", leave=False)):
        if not spec.covariate_tilt:
            vpn = spec.profile == "iscxvpn" and label >= len(shapes)
            b.normal_flow(int(label), shapes[int(label) % len(shapes)], vpn,
                          None if starts is None else float(starts[i]))
            continue
        assert starts is not None
        t0 = float(starts[i])
        while True:  # selection on x: a rejected flow is redrawn whole, class included, at the same time
            vpn = spec.profile == "iscxvpn" and label >= len(shapes)
            made = b.make_normal(shapes[int(label) % len(shapes)], vpn, t0)
            if b.rng.uniform() < keep_probability(made[3], spec.covariate_tilt, t0 / spec.duration_s):
                break
            redrawn += 1
            label = int(draw(weights_at(np.array([t0])))[0])
        b._add(int(label), *made)
    for k, kind in enumerate(spec.attacks):
        budget = n_attack_total // len(spec.attacks)
        b.attack_flows(len(normal_names) + k, kind, budget if kind != "UDP_DOS" else max(3, budget // 20))  # >= 3 flows: one per split
    ts = np.concatenate(b.p.ts)
    flow = np.concatenate(b.p.flow)
    order = np.argsort(ts, kind="stable")
    ts_ns = np.rint(ts[order] * 1e9).astype(np.int64) + TIME_BASE_NS
    fwd, size, flags = np.concatenate(b.p.fwd), np.concatenate(b.p.size), np.concatenate(b.p.flags)
    labels = np.asarray(b.labels, np.int16)[flow[order]]
    b.p = _Pkts()  # the per-flow lists are no longer needed
    manifest = {"format": DATASET_FORMAT, "name": f"synthetic-{spec.profile}", "source": "synthetic",
                "seed": spec.seed, "classes": classes, "captures": [], "packets": int(order.size),
                "unlabelled_packets": 0, "truncated_records": 0, "unreadable_captures": [],
                "generator": {"profile": spec.profile, "flows": len(b.endpoints), "seed": spec.seed,
                              "duration_s": spec.duration_s, "attacks": list(spec.attacks),
                              "attack_share": spec.attack_share, "drift": spec.drift, "diurnal": spec.diurnal,
                              "snaplen": spec.snaplen, "class_weights": spec.class_weights,
                              "class_weights_end": spec.class_weights_end, "attack_at_s": spec.attack_at_s,
                              "drift_step_at_s": spec.drift_step_at_s, "covariate_tilt": spec.covariate_tilt,
                              "covariate_redrawn": redrawn}}
    return finish_dataset(out, manifest, lambda p: _write_packets(p, b, order, flow, fwd, size, flags, ts_ns), labels)


def write_class_folders(spec: SyntheticSpec, out_dir: str | os.PathLike[str], files_per_class: int = 2) -> Path:
    """Generated traffic laid out as a real dataset is (``<out>/<CLASS>/<CLASS>-<k>.pcap``, one label per
    folder, as CICIoT2022 and PeerRush are), so the adapters can be exercised without the real data.

    A class's flows are dealt round-robin to its files; frames keep their timestamps. Classes
    without flows get no folder.
    """
    from chimera.data.dataset import load_dataset
    from chimera.data.pcapwrite import normalized_frames

    out = Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        ds = load_dataset(generate(spec, Path(tmp) / "ds"))
        fid = ds.flows.flow_id
        for y, cls in enumerate(ds.classes):
            flows = np.unique(fid[(ds.labels == y) & (fid >= 0)])
            if flows.size == 0:
                continue  # a class given no flows (weight 0) gets no folder
            (out / cls).mkdir(parents=True, exist_ok=True)
            for k in range(min(files_per_class, flows.size)):
                rows = np.flatnonzero(np.isin(fid, flows[k::files_per_class]))
                write_pcap(out / cls / f"{cls}-{k + 1}.pcap", normalized_frames(ds.table, rows), ds.table.ts_ns[rows])
    return out
