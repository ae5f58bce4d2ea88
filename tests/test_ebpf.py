"""eBPF testbed: conformance with the reference, malformed traffic, teardown. Needs root.

Conformance: every packet the switch classified must carry exactly the
verdict the reference pipeline computes for the same replayed frames on the
switch's own clock (its ingress timestamps), so replay timing cannot hide a
difference; no packet may be lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from chimera.compile.build import compile_model
from chimera.compile.config import CompileConfig
from chimera.data.pcap import read_pcap
from chimera.experiments.config import ReplayConfig, load_experiment, resolve_variants
from chimera.experiments.runner import Cache, ROOT, _fires, get_model, prepare, resolve_dataset
from chimera.formats.verdict import VerdictFlag
from chimera.pipeline.reference import dataplane_parsed
from chimera.rules.spec import load_rules
from chimera.rules.weights import learn_soft_weights
from chimera.targets.ebpf import EbpfTarget, unavailable_reason
from chimera.testbed.stress import write_stress_pcap

WHY = unavailable_reason()
pytestmark = [pytest.mark.root, pytest.mark.skipif(WHY is not None, reason=f"eBPF testbed unavailable here: {WHY}")]
FAST = ReplayConfig(mode="pps", pps=4000)  # conformance uses the switch clock, so pacing is free


class _Cfg:
    replay = FAST


def _artifact(dataset_override: dict | None, data_root: Path, flow_slots: int = 65536):
    over = {"dataset": dataset_override} if dataset_override else None
    cfg = load_experiment("quickstart", over)
    v = resolve_variants(cfg)[0]
    ds = resolve_dataset(cfg.dataset, data_root)
    pp = prepare(ds, cfg.seed)
    rules = load_rules(ROOT / cfg.rules)
    W = learn_soft_weights(_fires(rules, pp.rule_keys[pp.train_rows]), pp.y(pp.train_rows), len(ds.classes), seed=1)
    model, _, _ = get_model(pp, v.model.model_copy(update={"epochs": 2}), cfg.seed, Cache())
    art = compile_model(model, rules, W, CompileConfig(flow_slots=flow_slots), v.fusion, v.fusion.beta)
    return art, ds, pp


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    t = EbpfTarget(_Cfg(), build_dir=tmp_path_factory.mktemp("build"))
    yield t
    t.close()


def _check(res, n: int) -> None:
    x = res.extra
    assert x["lost"] == 0, f"{x['lost']} packets lost"
    assert x["conformance_checked"] == n
    assert x["reference_mismatches"] == 0
    assert x["unmarked_frames"] == 0
    assert x["ema_mismatches"] == 0  # the two-timescale registers agree too


def test_conformance_quickstart(target: EbpfTarget, tmp_path: Path) -> None:
    art, ds, pp = _artifact(None, ROOT / "data")
    table = ds.table.take(pp.replay_rows)
    res = target.run(art, table, tmp_path, "quickstart")
    _check(res, len(table))
    assert (res.verdicts.flags & VerdictFlag.NEW_FLOW).sum() > 0


def test_conformance_real_sample(target: EbpfTarget, tmp_path: Path, sample_dir: Path) -> None:
    art, ds, _ = _artifact({"path": str(sample_dir), "synthetic": None}, tmp_path / "data")
    res = target.run(art, ds.table, tmp_path, "sample")  # every frame, non-IP ones included
    _check(res, len(ds.table))
    expected = ~dataplane_parsed(ds.table)  # non-IP frames and the sample's IPv6 packets
    assert expected.sum() > ds.manifest["status"]["non_ip"]
    assert np.array_equal(res.verdicts.flags & VerdictFlag.UNPARSED > 0, expected)


def test_conformance_stress_collisions_and_malformed(target: EbpfTarget, tmp_path: Path) -> None:
    art, _, _ = _artifact(None, ROOT / "data", flow_slots=64)  # 64 slots for ~400 flows: constant evictions
    table = read_pcap(write_stress_pcap(tmp_path / "stress.pcap", seed=3))
    res = target.run(art, table, tmp_path, "stress")
    _check(res, len(table))
    flags = res.verdicts.flags
    assert int(np.sum(flags & VerdictFlag.EVICTED > 0)) > 50
    assert res.evictions == int(np.sum(flags & VerdictFlag.EVICTED > 0))
    unparsed = flags & VerdictFlag.UNPARSED > 0
    assert 0.1 < unparsed.mean() < 0.3  # ARP, IPv6, fragments, VLAN, truncated, bad IP: flagged, not dropped
    assert np.all(res.verdicts.label[unparsed] == 0xFF)


def test_teardown_leaves_nothing(tmp_path: Path) -> None:
    t = EbpfTarget(_Cfg(), build_dir=tmp_path / "build")
    art, ds, pp = _artifact(None, ROOT / "data")
    t.run(art, ds.table.take(pp.replay_rows[:200]), tmp_path, "short")
    pids = [n.pid for n in t.testbed.net.hosts + t.testbed.net.switches]
    state = t.testbed.state_file
    t.close()
    assert not state.exists()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"node shell {pid} survived"
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "s1-eth" not in links and "h1-eth0" not in links


def _live_in_netns(inode: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and os.stat(d / "ns" / "net").st_ino == inode and \
                    (d / "stat").read_text().rsplit(") ", 1)[1][0] != "Z":
                out.append(int(d.name))
        except OSError:
            pass
    return out


def test_killed_run_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    """SIGKILL a run while its capture runs; afterwards nothing of it lives and a new run starts cleanly."""
    script = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from chimera.testbed.nodes import EbpfSwitch
        from chimera.testbed.topology import Testbed
        tb = Testbed(EbpfSwitch, Path({str(tmp_path)!r}), Path({str(tmp_path)!r})).__enter__()
        cap = tb.h2.popen(["tcpdump", "-i", "h2-eth0", "-w", "/dev/null"], stderr=subprocess.DEVNULL)
        print(tb.state_file, flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    state = Path(p.stdout.readline().strip())
    nodes = json.loads(state.read_text())["nodes"]
    time.sleep(0.5)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    from chimera.testbed.topology import cleanup_stale
    cleanup_stale()
    time.sleep(0.5)
    assert not state.exists()
    for n in nodes:
        assert _live_in_netns(n["netns"]) == [], f"processes of the killed run live on in {n['name']}"
    # and the next run comes up and classifies
    t = EbpfTarget(_Cfg(), build_dir=tmp_path / "build")
    try:
        art, ds, pp = _artifact(None, ROOT / "data")
        res = t.run(art, ds.table.take(pp.replay_rows[:100]), tmp_path, "after-kill")
        _check(res, 100)
    finally:
        t.close()


def test_software_classifier_host_path(target: EbpfTarget, tmp_path: Path) -> None:
    """A † configuration through s1 -> sc -> s1: every packet marked by sc, and sc's verdicts equal an
    offline re-run of the same classifier on the same frames and clock."""
    from chimera.experiments.runner import _fires
    from chimera.compile.config import FusionConfig
    from chimera.testbed.classifier import export_model
    cfg = load_experiment("quickstart", {"model": {"attention": "softmax", "epochs": 2}})
    v = resolve_variants(cfg)[0]
    ds = resolve_dataset(cfg.dataset, ROOT / "data")
    pp = prepare(ds, cfg.seed)
    rules = load_rules(ROOT / cfg.rules)
    W = learn_soft_weights(_fires(rules, pp.rule_keys[pp.train_rows]), pp.y(pp.train_rows), len(ds.classes), seed=1)
    model, _, _ = get_model(pp, v.model, cfg.seed, Cache())
    mj = export_model(model, rules, W, FusionConfig(), 0.5, tmp_path / "sw.json")
    table = ds.table.take(pp.replay_rows[:600])
    res = target.run_software(mj, table, tmp_path, "softmax")
    assert res.extra["lost"] == 0 and res.extra["reference_mismatches"] == 0
    assert res.extra["conformance_checked"] == 600
    assert res.extra["latency_switch_p50_us"] > 0
