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

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

WHY = EbpfTarget.unavailable_reason()


@pytest.mark.skipif(WHY is not None, reason=f"the eBPF testbed cannot run here: {WHY}")
def test_latency_interleaves_every_path_and_keeps_every_packet(tmp_path: Path) -> None:
    cfg = {"name": "tiny-latency", "kind": "latency", "seed": 1, "target": "ebpf",
           "dataset": {"synthetic": {"profile": "ciciot", "flows": 150, "seed": 3, "duration_s": 20,
                                     "max_packets_per_flow": 40, "attacks": ["SCAN"], "attack_share": 0.1}},
           "rules": "rules/default.yaml", "model": {"centroids": 16, "window": 4, "epochs": 2},
           "latency": {"loads": {"low": 500, "high": 5000}, "max_packets": 300, "packets": {"high": 500},
                       "software": True, "repeats": 2}}
    p = tmp_path / "lat.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = run_experiment(load_experiment(str(p)), results_root=tmp_path / "r", data_root=ROOT / "data")
    per = pd.read_csv(out / "latency.csv.gz")
    summ = pd.read_csv(out / "latency_summary.csv")
    programs = {"chimera", "mark_only", "bare", "software host"}
    assert set(per["program"]) == programs and set(per["load"]) == {"low", "high"}
    n = per.groupby(["program", "load", "repeat"]).size()
    assert n.xs("low", level="load").eq(300).all() and n.xs("high", level="load").eq(500).all()  # per-load packets
    assert len(summ) == 4 * 2 * 2
    # every repeat runs every path once at each load, in an order of its own
    assert (summ.groupby(["load", "repeat"])["order"].apply(sorted).map(tuple) == (0, 1, 2, 3)).all()
    # every delivered, captured packet of a marked path has its in-switch time; a host time needs h1's capture of
    # its send too, which a busy machine's capture may drop: the summary says how many packets each trial's
    # percentiles rest on, and that count is the per-packet table's
    delivered = summ["packets"] - summ["lost"] - summ["not_sent"] - summ["dropped_by_capture"]
    marked = summ["program"] != "bare"   # the software host marks the header too
    assert (summ[marked]["switch_timed"] == delivered[marked]).all()
    assert (summ[~marked]["switch_timed"] == 0).all()   # bare: no header, no in-switch time
    assert ((summ["host_timed"] > 0) & (summ["host_timed"] <= delivered)).all()
    trial = ["program", "load", "repeat"]
    counted = per.groupby(trial)[["switch_us", "host_us"]].count().rename(columns=lambda c: c.replace("_us", "_timed"))
    assert counted.equals(summ.set_index(trial).loc[counted.index, ["switch_timed", "host_timed"]])
    assert (per["switch_us"].dropna() > 0).all() and (per["host_us"].dropna() > 0).all()
    assert summ["steal_share"].between(0, 1).all()   # every trial says how much CPU the hypervisor took
    assert (summ["lost"] == 0).all()
    assert (summ[summ["program"] == "chimera"]["reference_mismatches"] == 0).all()
    # the kernel counted every switch program's runs: at least one per packet it carried
    sw = summ[summ["program"] != "software host"]
    assert (sw["program_runs"] >= 300).all() and (sw["program_ns"] > 0).all()
    cost = pd.read_csv(out / "latency_cost.csv")
    added = cost[(cost["a"] == "chimera") & (cost["b"] == "bare") & (cost["measure"] == "host_p50_us")]
    assert set(added["statistic"]) == {"difference", "ratio"} and (added["repeats"] == 2).all()
    assert ((added["lo"] <= added["estimate"]) & (added["estimate"] <= added["hi"])).all()
    # the interval is the mean of the per-repeat paired values, recomputed here from the trials
    hi = summ[summ["load"] == "high"].set_index(["program", "repeat"])["host_p50_us"]
    want = (hi["chimera"] - hi["bare"]).mean()
    got = added[(added["load"] == "high") & (added["statistic"] == "difference")]["estimate"].iloc[0]
    assert abs(got - want) < 1e-9
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


def test_costs_pair_each_repeat_with_itself() -> None:
    """The cost of a path over another is the mean of per-repeat paired values: rows stored in any order pair
    by repeat, so a drift shared within a repeat cancels (here exactly: 1 µs in every repeat)."""
    from chimera.experiments.kinds.latency.run import costs
    rows = [{"program": p, "load": "high", "pps": 100, "repeat": r, "host_p50_us": base + (1.0 if p == "chimera" else 0),
             "switch_p50_us": float("nan"), "switch_p99_us": float("nan"), "host_p99_us": float("nan"),
             "program_ns": float("nan"), "switch_tail": float("nan")}
            for r, base in ((0, 10.0), (1, 50.0), (2, 30.0)) for p in ("chimera", "bare")]
    summ = pd.DataFrame(rows).sample(frac=1, random_state=3)   # rows out of order
    c = costs(summ, seed=1)
    d = c[(c["a"] == "chimera") & (c["b"] == "bare") & (c["statistic"] == "difference")].iloc[0]
    assert (d["estimate"], d["lo"], d["hi"], d["repeats"]) == (1.0, 1.0, 1.0, 3)
    assert set(c["measure"]) == {"host_p50_us"}   # measures no path has are left out, not zero


def test_a_timing_kind_on_a_target_without_a_testbed_names_the_testbeds(tmp_path: Path) -> None:
    """The reference has no testbed: the throughput kind refuses it before any work, and the fix names the
    testbed targets from the registry (no target spelled out in the kind's code)."""
    from chimera.errors import ConfigError
    from chimera.targets.base import Capability
    from chimera.targets.registry import with_capability
    cfg = {"name": "tiny-throughput", "kind": "throughput", "seed": 1, "target": "reference",
           "dataset": {"synthetic": {"profile": "ciciot", "flows": 50, "seed": 3, "duration_s": 5}},
           "rules": "rules/default.yaml", "model": {"centroids": 16, "window": 4, "epochs": 1},
           "throughput": {"sizes": [64], "max_packets": 100, "ladder_pps": [1000]}}
    p = tmp_path / "tput.yaml"
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match="measures a testbed") as e:
        run_experiment(load_experiment(str(p)), results_root=tmp_path / "r", data_root=ROOT / "data")
    testbeds = [c.name for c in with_capability(Capability.TESTBED)]
    assert testbeds and all(n in e.value.fix for n in testbeds)
