"""The latency experiment on the eBPF testbed: every packet's latency kept per path and load, conformance held."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from chimera.experiments.load import load_experiment
from chimera.experiments.runner import run_experiment
from chimera.targets.ebpf import EbpfTarget

from builders import ROOT

WHY = EbpfTarget.unavailable_reason()


@pytest.mark.skipif(WHY is not None, reason=f"the eBPF testbed cannot run here: {WHY}")
def test_latency_keeps_every_packet_per_path_and_load(tmp_path: Path) -> None:
    cfg = {"name": "tiny-latency", "kind": "latency", "seed": 1, "target": "ebpf",
           "dataset": {"synthetic": {"profile": "ciciot", "flows": 150, "seed": 3, "duration_s": 20,
                                     "max_packets_per_flow": 40, "attacks": ["SCAN"], "attack_share": 0.1}},
           "rules": "rules/default.yaml", "model": {"centroids": 16, "window": 4, "epochs": 2},
           "latency": {"loads": {"low": 500, "high": 5000}, "max_packets": 300, "software": True}}
    p = tmp_path / "lat.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = run_experiment(load_experiment(str(p)), results_root=tmp_path / "r", data_root=ROOT / "data")
    per = pd.read_csv(out / "latency.csv.gz")
    summ = pd.read_csv(out / "latency_summary.csv")
    assert set(per["load"]) == {"low", "high"} and per["path"].nunique() == 2
    assert per.groupby(["path", "load"]).size().eq(300).all()
    sw = per[per["path"] == "ebpf switch"]
    assert (sw["switch_us"].dropna() > 0).all() and (sw["host_us"].dropna() > 0).mean() > 0.99
    assert (summ["reference_mismatches"] == 0).all() and (summ["lost"] == 0).all()
    assert (summ["sent_pps"][summ["load"] == "high"] > 2 * summ["sent_pps"][summ["load"] == "low"].max()).all()
    assert "![latency](figures/latency.png)" in (out / "report.md").read_text()


@pytest.mark.skipif(WHY is not None, reason=f"the eBPF testbed cannot run here: {WHY}")
def test_throughput_paths_sizes_and_zero_loss_ladder(tmp_path: Path) -> None:
    cfg = {"name": "tiny-throughput", "kind": "throughput", "seed": 1, "target": "ebpf",
           "dataset": {"synthetic": {"profile": "ciciot", "flows": 300, "seed": 3, "duration_s": 20,
                                     "max_packets_per_flow": 60, "attacks": ["SCAN"], "attack_share": 0.1}},
           "rules": "rules/default.yaml", "model": {"centroids": 16, "window": 4, "epochs": 2},
           "throughput": {"sizes": [64, "mix"], "max_packets": 1500, "ladder_pps": [1000, 4000], "software": True}}
    p = tmp_path / "tput.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = run_experiment(load_experiment(str(p)), results_root=tmp_path / "r", data_root=ROOT / "data")
    df = pd.read_csv(out / "throughput.csv")
    assert set(df["path"]) == {"Chimera (ebpf)", "bare forwarding", "software classifier host †"}
    assert set(df["frame"].astype(str)) == {"64", "mix"}
    assert (df["delivered_pps"] > 0).all()
    acc = df["verdicts"] + df["not_sent"] + df["dropped_by_capture"] + df["lost"]
    assert (acc[df["path"] != "bare forwarding"] == df["replayed"][df["path"] != "bare forwarding"]).all()
    assert (df["reference_mismatches"].dropna() == 0).all()
    ch64 = df[(df["path"] == "Chimera (ebpf)") & (df["frame"].astype(str) == "64")]
    assert abs(ch64["mean_frame_bytes"].iloc[0] - 64) < 1e-9
    ladder = pd.read_csv(out / "ladder.csv")
    assert list(ladder["pps"])[:1] == [1000] and (ladder["reference_mismatches"] == 0).all()
    assert "Highest rate offered with 0 packets lost unexplained" in (out / "report.md").read_text()
