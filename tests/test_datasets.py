"""Synthetic generator determinism and the real-dataset adapters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from chimera.data.adapters import iscx_label, normalize
from chimera.data.dataset import load_dataset
from chimera.data.synthetic import SyntheticSpec, generate, profile_classes
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


def test_generator_bad_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown synthetic profile"):
        generate(_spec(profile="nope"), tmp_path / "x")
    with pytest.raises(ConfigError, match="unknown attack"):
        generate(_spec(attacks=("NUKE",)), tmp_path / "x")


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
