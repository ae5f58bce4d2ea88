"""Synthetic generator determinism and the real-dataset adapters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from chimera.data.adapters import iscx_label, normalize
from chimera.data.dataset import load_dataset
from chimera.data.synthetic import SyntheticSpec, generate, keep_probability, profile_classes
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from chimera.errors import ConfigError, DatasetError

from builders import TINY_MULTICLASS


def _spec(**kw: object) -> SyntheticSpec:
    base = dict(profile="peerrush", flows=60, seed=11, duration_s=10, max_packets_per_flow=30)
    base.update(kw)
    return SyntheticSpec(**base)  # type: ignore[arg-type]


def test_generator_is_deterministic(tmp_path: Path) -> None:
    a = generate(_spec(), tmp_path / "a")
    b = generate(_spec(), tmp_path / "b")
    c = generate(_spec(seed=12), tmp_path / "c")
    assert (a / "packets.pcap").read_bytes() == (b / "packets.pcap").read_bytes()
    assert np.array_equal(np.load(a / "labels.npy"), np.load(b / "labels.npy"))
    assert (a / "packets.pcap").read_bytes() != (c / "packets.pcap").read_bytes()
    m = json.loads((a / "manifest.json").read_text())
    assert m["generator"]["seed"] == 11 and m["packets_sha256"]


@pytest.mark.parametrize("profile", ["ciciot", "peerrush", "iscxvpn"])
def test_profiles_have_every_class(tmp_path: Path, profile: str) -> None:
    ds = load_dataset(generate(_spec(profile=profile, flows=200), tmp_path / profile))
    assert ds.classes == profile_classes(profile)
    assert set(np.unique(ds.flow_labels())) == set(range(len(ds.classes)))


def test_attacks(tmp_path: Path) -> None:
    ds = load_dataset(generate(_spec(profile="ciciot", flows=300, attacks=("SCAN", "SYN_FLOOD", "UDP_DOS"),
                                     attack_share=0.2), tmp_path / "att"))
    syn = ds.classes.index("SYN_FLOOD")
    m = ds.labels == syn
    assert m.any() and np.all(ds.table.ip_len[m] == 40) and np.all(ds.table.tcp_flags[m] == 0x02)
    assert (ds.labels == ds.classes.index("SCAN")).any() and (ds.labels == ds.classes.index("UDP_DOS")).any()


def _per_flow(ds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """(start time, mean IP length, duration) per flow."""
    f, t = ds.flows, ds.table
    ok = f.flow_id >= 0
    n = np.bincount(f.flow_id[ok])
    mean_len = np.bincount(f.flow_id[ok], weights=t.ip_len[ok].astype(float)) / n
    start = t.ts_ns[f.first_packet]
    end = np.zeros(f.n_flows, np.int64)
    np.maximum.at(end, f.flow_id[ok], t.ts_ns[ok])
    return start, mean_len, (end - start).astype(float)


def test_drift_grows_sizes_and_gaps_over_the_capture(tmp_path: Path) -> None:
    """Same seed with and without drift: the same flows, scaled by (1 + drift * start/duration)."""
    spec = dict(profile="ciciot", flows=400, duration_s=60, max_packets_per_flow=60)
    a = load_dataset(generate(_spec(**spec, drift=0.0), tmp_path / "d0"))
    b = load_dataset(generate(_spec(**spec, drift=1.0), tmp_path / "d1"))
    assert a.flows.n_flows == b.flows.n_flows
    sa, la, da = _per_flow(a)
    _, lb, db = _per_flow(b)
    pos = (sa - sa.min()) / (sa.max() - sa.min())
    early, late = pos < 0.25, pos > 0.75
    len_ratio, dur_ratio = lb / la, db / np.maximum(da, 1)
    # IP lengths include fixed headers and handshakes, so sizes grow less than payloads (x2 by the end)
    assert np.median(len_ratio[early]) < 1.12 and np.median(len_ratio[late]) > 1.2
    assert np.median(dur_ratio[early]) < 1.2 and np.median(dur_ratio[late]) > 1.5


def test_a_day_without_the_covariate_tilt_is_the_day_it_was(tmp_path: Path) -> None:
    """The covariate knob draws nothing where it is off: a drifting day with a class-mix schedule is byte for byte
    the one the generator made before the knob existed (sha256 prefixes taken from its commit, 45f84f4)."""
    import hashlib
    out = generate(SyntheticSpec(profile="ciciot", flows=300, seed=3, attacks=("SCAN",), drift=1.0, diurnal=0.5,
                                 class_weights_end={"IDLE": 5.0}), tmp_path / "d")
    assert hashlib.sha256((out / "packets.pcap").read_bytes()).hexdigest()[:16] == "21f1949a265b184c"
    assert hashlib.sha256((out / "labels.npy").read_bytes()).hexdigest()[:16] == "831dae43cb3f4e72"


def test_keep_probability_reads_lengths_and_is_a_probability() -> None:
    small, mid, large = np.full(20, 20), np.full(20, 260), np.full(20, 1300)
    for tilt in (-2.0, -0.5, 0.5, 2.0):
        p = [keep_probability(x, tilt, 1.0) for x in (small, mid, large)]
        assert all(0 < q <= 1 for q in p)
        assert p == sorted(p) if tilt > 0 else p == sorted(p, reverse=True)
        assert all(keep_probability(x, tilt, 0.0) == 1.0 for x in (small, mid, large))  # the start is untilted
    assert keep_probability(large, 2.0, 1.0) == 1.0 and keep_probability(small, -2.0, 1.0) == 1.0


def test_the_covariate_tilt_moves_lengths_late_in_the_day(tmp_path: Path) -> None:
    """Selection on lengths: a positive tilt keeps longer flows late in the day, a negative one shorter ones; the
    early flows look as on the untilted day. The manifest records the tilt and how many flows were redrawn."""
    spec = dict(profile="ciciot", flows=600, duration_s=60, max_packets_per_flow=40)
    late_mean = {}
    for tilt in (-1.5, 0.0, 1.5):
        d = load_dataset(generate(_spec(**spec, covariate_tilt=tilt), tmp_path / f"t{tilt}"))
        start, mean_len, _ = _per_flow(d)
        pos = (start - start.min()) / (start.max() - start.min())
        late_mean[tilt] = float(np.mean(mean_len[pos > 0.75]))
        g = json.loads((tmp_path / f"t{tilt}" / "manifest.json").read_text())["generator"]
        assert g["covariate_tilt"] == tilt and (g["covariate_redrawn"] > 0) == (tilt != 0)
    assert late_mean[-1.5] < 0.8 * late_mean[0.0] and late_mean[1.5] > 1.2 * late_mean[0.0]


def test_a_covariate_day_keeps_the_configured_class_mix(tmp_path: Path) -> None:
    """Without class_weights_end, a tilted day draws (and redraws) classes from class_weights all day: a class
    weighted 0 never occurs (seen failing when the redraws drifted toward equal weights by midnight)."""
    d = load_dataset(generate(_spec(profile="ciciot", flows=300, duration_s=30, max_packets_per_flow=30,
                                    class_weights={"IDLE": 0.0}, covariate_tilt=1.5), tmp_path / "d"))
    assert "IDLE" in d.classes and not (d.labels == d.classes.index("IDLE")).any()


def test_generator_bad_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown synthetic profile"):
        generate(_spec(profile="nope"), tmp_path / "x")
    with pytest.raises(ConfigError, match="unknown attack"):
        generate(_spec(attacks=("NUKE",)), tmp_path / "x")
    with pytest.raises(ConfigError, match=r"covariate_tilt=5.0 is outside \[-4, 4\]"):
        generate(_spec(covariate_tilt=5.0), tmp_path / "x")


def test_ciciot_adapter_on_real_sample(cic_sample: Path) -> None:
    ds = load_dataset(cic_sample)
    assert ds.classes == ["ALEXA_PLAY", "ALEXA_STOP", "LAN_PLAY", "LAN_STOP", "POWER"]
    assert len(ds.table) == 8492 and len(ds.manifest["captures"]) == 15
    assert ds.manifest["status"]["non_ip"] == 18  # LLC/ARP frames are counted, not dropped
    for cap in ds.manifest["captures"]:
        assert cap["label"] in Path(cap["file"]).parent.name
    assert set(np.unique(ds.labels)) == set(range(5))


def test_folders_layout_of_the_bundled_sample(tiny_multiclass: Path) -> None:
    ds = load_dataset(tiny_multiclass)
    assert ds.classes == ["Vuze", "eMule", "uTorrent"]
    assert len(ds.manifest["captures"]) == 6 and ds.manifest["skipped_files"] == []
    for cap in ds.manifest["captures"]:
        assert Path(cap["file"]).parent.name == cap["label"]


def test_existing_output_is_not_overwritten(tiny_multiclass: Path) -> None:
    before = (tiny_multiclass / "manifest.json").read_bytes()
    with pytest.raises(DatasetError, match="already exists"):
        normalize("ciciot2022", TINY_MULTICLASS, tiny_multiclass)
    assert (tiny_multiclass / "manifest.json").read_bytes() == before


def test_iscx_file_names() -> None:
    assert iscx_label("vpn_skype_chat1b.pcap") == "vpn_chat"
    assert iscx_label("facebook_audio1a.pcap") == "voip"
    assert iscx_label("youtube1.pcap") == "streaming"
    assert iscx_label("ftps_down_1a.pcap") == "file"
    assert iscx_label("email1a.pcap") == "email"
    assert iscx_label("vpn_bittorrent.pcap") == "vpn_p2p"
    assert iscx_label("README.pcap") is None


def test_iscx_and_peerrush_layouts(tmp_path: Path) -> None:
    small = sorted(TINY_MULTICLASS.rglob("*.pcap"))[:3]
    iscx = tmp_path / "iscx"
    iscx.mkdir()
    for src, name in zip(small, ["vpn_skype_chat1b.pcap", "youtube1.pcap", "unknown_thing.pcap"]):
        shutil.copy(src, iscx / name)
    ds = load_dataset(normalize("iscxvpn2016", iscx, tmp_path / "iscx-out"))
    assert ds.classes == ["streaming", "vpn_chat"]
    assert [s["file"].endswith("unknown_thing.pcap") for s in ds.manifest["skipped_files"]] == [True]
    pr = tmp_path / "peerrush"
    for src, app in zip(small, ["emule", "uTorrent", "Vuze"]):
        (pr / app / "caps").mkdir(parents=True)
        shutil.copy(src, pr / app / "caps" / "x.pcap")
    assert load_dataset(normalize("peerrush", pr, tmp_path / "pr-out")).classes == ["Vuze", "eMule", "uTorrent"]


def test_adapter_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such directory"):
        normalize("ciciot2022", tmp_path / "missing", tmp_path / "o")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no .pcap"):
        normalize("ciciot2022", tmp_path / "empty", tmp_path / "o")
    one = tmp_path / "one" / "POWER"
    one.mkdir(parents=True)
    shutil.copy(next(TINY_MULTICLASS.rglob("*.pcap")), one / "a.pcap")
    with pytest.raises(DatasetError, match="only one class"):
        normalize("ciciot2022", tmp_path / "one", tmp_path / "o")
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(next(TINY_MULTICLASS.rglob("*.pcap")), flat / "a.pcap")
    with pytest.raises(DatasetError, match="no capture has a recognizable"):
        normalize("iscxvpn2016", flat, tmp_path / "o")
    with pytest.raises(DatasetError, match="unknown dataset adapter"):
        normalize("nope", flat, tmp_path / "o")
    with pytest.raises(DatasetError, match="not a normalized dataset"):
        load_dataset(flat)


def _cap(path: Path, pkts: list, times: list[float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    for p, t in zip(pkts, times):
        p.time = t
    wrpcap(str(path), pkts)
    return path


def _udp(i: int, sport: int = 1000):  # type: ignore[no-untyped-def]
    return Ether() / IP(src="10.0.0.1", dst=f"10.0.1.{i % 200 + 1}") / UDP(sport=sport, dport=53) / bytes(10)


def test_decades_and_out_of_order_timelines_are_normalized(tmp_path: Path) -> None:
    """1970 and 2022 timestamps in one capture, and small steps back: no crash, every adjustment counted."""
    src = tmp_path / "src"
    _cap(src / "A" / "a.pcap", [_udp(i) for i in range(6)], [5.0, 6.0, 1_650_000_000.0, 1_650_000_001.0,
                                                              1_650_000_000.5, 1_650_000_002.0])
    _cap(src / "B" / "b.pcap", [_udp(i, 2000) for i in range(3)], [100.0, 101.0, 102.0])
    ds = load_dataset(normalize("folders", src, tmp_path / "out"))
    a = next(c for c in ds.manifest["captures"] if c["label"] == "A")
    assert a["timeline"]["rebased_jumps"] == 1 and a["timeline"]["clamped_backsteps"] == 1
    assert a["timeline"]["jumps"][0]["at_frame"] == 2
    assert np.all(np.diff(ds.table.ts_ns) >= 0)
    assert ds.table.ts_ns.max() - ds.table.ts_ns.min() < 20 * 10**9  # decades folded into seconds


def test_unreadable_capture_is_skipped_and_recorded(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for cls in ("A", "B"):
        shutil.copy(next(TINY_MULTICLASS.rglob("*.pcap")), (src / cls).mkdir(parents=True) or src / cls / "ok.pcap")
    (src / "A" / "broken.pcap").write_bytes(b"this is not a capture")
    ds = load_dataset(normalize("folders", src, tmp_path / "out"))
    (u,) = ds.manifest["unreadable_captures"]
    assert u["file"].endswith("broken.pcap") and "not a pcap" in u["reason"] and u["fix"]
    (src / "B" / "ok.pcap").write_bytes(b"")  # class B loses its only capture: that is an error
    with pytest.raises(DatasetError, match=r"class\(es\) \['B'\] have no readable capture"):
        normalize("folders", src, tmp_path / "out2")


def test_overlay_starts_captures_together_and_keeps_flow_features(tmp_path: Path) -> None:
    from chimera.data.dataset import NormalizeOptions
    seq = load_dataset(normalize("folders", TINY_MULTICLASS, tmp_path / "seq"))
    ovl = load_dataset(normalize("folders", TINY_MULTICLASS, tmp_path / "ovl",
                                 options=NormalizeOptions(layout="overlay")))
    dur = lambda d: int(d.table.ts_ns.max() - d.table.ts_ns.min())  # noqa: E731
    assert dur(ovl) < dur(seq) / 3  # six captures of ~8 s: played together, not back to back
    assert ovl.manifest["normalization"]["layout"] == "overlay"
    iat = lambda d: sorted(d.flows.iat_ns[d.flows.iat_ns >= 0].tolist())  # noqa: E731
    assert iat(ovl) == iat(seq)


def test_per_class_packet_cap_keeps_whole_flows(tmp_path: Path) -> None:
    from chimera.data.dataset import NormalizeOptions
    ds = load_dataset(normalize("folders", TINY_MULTICLASS, tmp_path / "cap",
                                options=NormalizeOptions(max_packets_per_class=60)))
    counts = np.bincount(ds.labels[ds.labels >= 0])
    assert counts.max() <= 60 and counts.min() > 0
    assert set(ds.manifest["capped_packets_per_class"]) == set(ds.classes)
    full = load_dataset(normalize("folders", TINY_MULTICLASS, tmp_path / "full"))
    import pandas as pd
    key = ["src", "sport", "dst", "dport", "proto"]
    kept = pd.read_csv(ds.root / "flows.csv").merge(pd.read_csv(full.root / "flows.csv"), on=key,
                                                    suffixes=("", "_full"))
    assert len(kept) == ds.flows.n_flows and (kept["packets"] == kept["packets_full"]).all()  # flows kept whole
    assert full.flows.n_flows > ds.flows.n_flows
