"""The trace clock and the switch clock (docs/pipeline.md, "Clocks").

- The reference's verdicts do not depend on the trace's origin (the shim's trace_ns is the capture time minus
  an aligned origin): the clock a switch classifies on under ``clock: trace`` gives the reference's verdicts.
- Gap compression (chimera.testbed.timeline) changes no reference verdict, on a trace with long idle gaps and
  with 32-bit wrap-around idles.
- A replay plan says how long it takes before anything starts, and one over its budget is refused, naming the
  fixes; under the trace clock the same days-long dataset plans in seconds.
- The days-long multi-capture dataset (the bundled captures with long idle gaps) runs the quickstart on the
  eBPF testbed (and BMv2 where installed) under the trace clock with 0 lost and F1 identical to the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chimera.data.adapters import normalize
from chimera.data.dataset import load_dataset
from chimera.errors import ConfigError
from chimera.formats import shim
from chimera.reference.pipeline import run_reference
from chimera.testbed.replay import ReplayConfig
from chimera.testbed.timeline import KEEP_NS, compress_gaps

from builders import ROOT, long_gap_captures, quickstart_artifact
from test_reference import random_artifact, random_packets

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

FIELDS = ("label", "flags", "score", "rule_id", "centroid")


def same_verdicts(a, b) -> bool:  # type: ignore[no-untyped-def]
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


@pytest.fixture(scope="module")
def long_gap_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = long_gap_captures(tmp_path_factory.mktemp("raw") / "long-gap")
    return normalize("folders", src, tmp_path_factory.mktemp("ds") / "long-gap")


def test_the_long_gap_dataset_spans_days(long_gap_dataset: Path) -> None:
    ts = load_dataset(long_gap_dataset).table.ts_ns
    assert (ts.max() - ts.min()) / 3.6e12 > 24  # hours: a real multi-capture dataset's shape


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reference_verdicts_do_not_depend_on_the_trace_origin(seed: int) -> None:
    """What a switch sees under the trace clock (capture time minus the aligned origin) gives the reference's
    verdicts on the capture's own timestamps, wrap-around idles included."""
    art = random_artifact(seed)
    table, _ = random_packets(seed, 400)
    a, _ = run_reference(art, table)
    b, _ = run_reference(art, table, ts_ns=table.ts_ns - shim.trace_origin(table.ts_ns))
    assert same_verdicts(a, b)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_gap_compression_changes_no_verdict_with_wraps(seed: int) -> None:
    """Random traffic whose gaps include 2^42 ns (one 32-bit wrap of the per-flow timestamp): the compressed
    timeline gives the reference's verdicts exactly, and it is shorter."""
    art = random_artifact(seed)
    table, _ = random_packets(seed, 400)
    order = np.argsort(table.ts_ns, kind="stable")
    table = table.take(order)
    comp = compress_gaps(table, art.c("FLOW_SLOTS"))
    a, _ = run_reference(art, table)
    b, _ = run_reference(art, table, ts_ns=comp.ts_ns)
    assert same_verdicts(a, b)
    assert comp.enabled and comp.removed_ns > 0
    assert np.all(np.diff(comp.ts_ns) >= 0)


def test_gap_compression_on_the_long_gap_dataset(long_gap_dataset: Path) -> None:
    built = quickstart_artifact(dataset={"path": str(long_gap_dataset), "synthetic": None})
    table = built.data.replay_table
    comp = compress_gaps(table, built.art.c("FLOW_SLOTS"))
    a, _ = run_reference(built.art, table)
    b, _ = run_reference(built.art, table, ts_ns=comp.ts_ns)
    assert same_verdicts(a, b)
    span = float(table.ts_ns.max() - table.ts_ns.min())
    assert float(comp.ts_ns.max() - comp.ts_ns.min()) < span / 100  # days become minutes
    assert np.all(np.diff(comp.ts_ns)[np.diff(table.ts_ns) > KEEP_NS] >= KEEP_NS - (1 << 10))


def test_a_wrong_compression_would_be_caught() -> None:
    """The check inside compress_gaps is what makes it exact: shortening every gap to 1 ms (below the
    saturation) changes verdicts, which is why compression keeps >= KEEP_NS."""
    art = random_artifact(4)
    table, _ = random_packets(4, 400)
    table = table.take(np.argsort(table.ts_ns, kind="stable"))
    ts = table.ts_ns.copy()
    gaps = np.diff(ts)
    naive = ts - np.r_[0, np.cumsum(np.where(gaps > 1_000_000, gaps - 1_000_000, 0))]
    a, _ = run_reference(art, table)
    b, _ = run_reference(art, table, ts_ns=naive)
    assert not same_verdicts(a, b)


def test_plans_say_how_long_and_refuse_over_budget(long_gap_dataset: Path, tmp_path: Path) -> None:
    """Before any topology: the switch clock at original timing without compression is refused (days), naming
    the fixes; with gap compression it fits; the trace clock plans at a rate, in seconds."""
    from chimera.targets.ebpf import EbpfTarget
    built = quickstart_artifact(dataset={"path": str(long_gap_dataset), "synthetic": None})
    table = built.data.replay_table
    t = EbpfTarget(build_dir=tmp_path / "build")  # plan() builds nothing and needs no root
    plan, _ = t.plan(built.art, table, tmp_path, ReplayConfig(clock="switch", gap_compression=False), False)
    assert plan.expected_s > 24 * 3600
    with pytest.raises(ConfigError, match="over its budget") as ei:
        plan.check_budget(1800)
    assert "clock: trace" in str(ei.value) and "gap_compression" in str(ei.value) and "--max-replay" in str(ei.value)
    plan, _ = t.plan(built.art, table, tmp_path, ReplayConfig(clock="switch"), False)
    assert plan.compression["enabled"] and plan.expected_s < 600
    plan.check_budget(1800)
    plan, _ = t.plan(built.art, table, tmp_path, ReplayConfig(clock="trace", pps=2000), False)
    assert plan.expected_s == pytest.approx(len(table) / 2000)
    assert "clock trace" in plan.describe()


@pytest.mark.root
@pytest.mark.parametrize("target", ["ebpf", "bmv2"])
def test_days_long_dataset_quickstart_on_the_trace_clock(target: str, long_gap_dataset: Path,
                                                         tmp_path: Path) -> None:
    """The done-when of the trace clock: a dataset whose timeline spans days runs the quickstart on a switch
    under the trace clock with 0 lost, 0 mismatches, and F1 bit-identical to the reference's."""
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    from chimera.targets.registry import target_class
    why = target_class(target).unavailable_reason()
    if why is not None:
        pytest.skip(f"{target} cannot run here: {why}")
    over = {"dataset": {"path": str(long_gap_dataset), "synthetic": None}, "model": {"epochs": 3}}
    cfg = load_experiment("quickstart", over)
    ref = pd.read_csv(run_experiment(cfg, target="reference", results_root=tmp_path / "r", data_root=ROOT / "data")
                      / "ablation.csv")
    out = run_experiment(cfg, target=target, results_root=tmp_path / "r", data_root=ROOT / "data")
    sw = pd.read_csv(out / "ablation.csv")
    assert (sw["clock"] == "trace").all()
    assert (sw["lost"] == 0).all() and (sw["reference_mismatches"] == 0).all() and (sw["register_mismatches"] == 0).all()
    assert list(sw["macro_f1"]) == list(ref["macro_f1"])  # bit for bit
    m = json.loads((out / "manifest.json").read_text())
    assert m["clock"] == "trace"
    assert (out / "report.md").read_text().splitlines()[0].startswith(f"Target **{target}**")


def test_gap_compression_keeps_a_wrapped_inter_arrival() -> None:
    """A flow idle for one 32-bit wrap of its timestamp plus 1 ms (2^42 ns + 1 ms) gets the bucket of 1 ms on the
    switch and in the reference (the wrap is the dataplane's, kept identical). Shortening that idle gap would give
    it the saturated bucket instead: the compression must leave that gap whole, and the verdicts equal."""
    from test_reference import packet_table
    art = random_artifact(6)
    a, b = (0x0A000001, 1234), (0x0A000002, 80)
    rows, t = [], 10**12
    for k in range(6):  # flow a <-> b: a few packets 100 µs apart
        rows.append({"src": a[0], "sport": a[1], "dst": b[0], "dport": b[1], "ts": t, "proto": 6, "flags": 0x18,
                     "ip_len": 200, "parsed": True})
        t += 100_000
    t += (1 << 42) + 1_000_000  # idle: one wrap plus 1 ms, no packet of anyone in between
    for k in range(4):
        rows.append({"src": a[0], "sport": a[1], "dst": b[0], "dport": b[1], "ts": t, "proto": 6, "flags": 0x18,
                     "ip_len": 200, "parsed": True})
        t += 100_000
    table = packet_table(rows)
    comp = compress_gaps(table, art.c("FLOW_SLOTS"))
    x, _ = run_reference(art, table)
    y, _ = run_reference(art, table, ts_ns=comp.ts_ns)
    assert same_verdicts(x, y)
    assert comp.gaps_kept == 1 and comp.gaps_compressed == 0  # the wrap gap stayed whole
    from chimera.testbed.timeline import iat_buckets_of_pairs, slot_pairs
    prev, idx = slot_pairs(table, art.c("FLOW_SLOTS"))
    wrapped = iat_buckets_of_pairs(table.ts_ns, prev, idx)[idx == 6]
    assert wrapped.tolist() == [1 + 11]  # 1.1 ms = 1074 units: bit length 11, not the saturated 15
