"""BMv2 conformance: every verdict of simple_switch_grpc running chimera.p4 equals the reference's.

Runs where p4c-bm2-ss and simple_switch_grpc are installed (the reviewers' VM);
skips elsewhere with the reason. Replay is paced below BMv2's capacity and the
harness measures and reports loss; conformance is checked on what arrived.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chimera.data.pcap import read_pcap
from chimera.errors import ToolMissingError
from chimera.experiments.config import ReplayConfig
from chimera.targets import select_target
from chimera.targets.bmv2 import Bmv2Target, unavailable_reason
from chimera.testbed.stress import write_stress_pcap

WHY = unavailable_reason()


class _Cfg:
    replay = ReplayConfig(mode="pps", pps=300)


@pytest.mark.skipif(WHY is None, reason="BMv2 is installed here: the fail-fast path does not apply")
def test_bmv2_target_fails_fast_naming_what_to_install() -> None:
    with pytest.raises(ToolMissingError, match="simple_switch_grpc") as ei:
        select_target("bmv2")
    assert "p4lang" in str(ei.value) and "fix:" in str(ei.value)


needs_bmv2 = pytest.mark.skipif(WHY is not None, reason=f"BMv2 tests need p4c + BMv2: {WHY}")


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    t = Bmv2Target(_Cfg(), build_dir=tmp_path_factory.mktemp("build"))
    yield t
    t.close()


@needs_bmv2
@pytest.mark.root
def test_bmv2_conformance_quickstart(target: Bmv2Target, tmp_path: Path) -> None:
    from test_ebpf import _artifact
    from chimera.experiments.runner import ROOT
    art, ds, pp = _artifact(None, ROOT / "data")
    table = ds.table.take(pp.replay_rows[:1500])
    res = target.run(art, table, tmp_path, "quickstart")
    assert res.extra["reference_mismatches"] == 0
    assert res.extra["conformance_checked"] + res.extra["lost"] == len(table)


@needs_bmv2
@pytest.mark.root
def test_bmv2_conformance_real_sample(target: Bmv2Target, tmp_path: Path, sample_dir: Path) -> None:
    from test_ebpf import _artifact
    art, ds, _ = _artifact({"path": str(sample_dir), "synthetic": None}, tmp_path / "data")
    res = target.run(art, ds.table, tmp_path, "sample")
    assert res.extra["reference_mismatches"] == 0


@needs_bmv2
@pytest.mark.root
def test_bmv2_conformance_stress(target: Bmv2Target, tmp_path: Path) -> None:
    from test_ebpf import _artifact
    from chimera.experiments.runner import ROOT
    art, _, _ = _artifact(None, ROOT / "data", flow_slots=64)
    table = read_pcap(write_stress_pcap(tmp_path / "stress.pcap", seed=3, packets=1500))
    res = target.run(art, table, tmp_path, "stress")
    assert res.extra["reference_mismatches"] == 0


FILES_WHY = __import__("chimera.targets.bmv2.files", fromlist=["x"]).unavailable_reason()


@pytest.mark.skipif(FILES_WHY is not None, reason=f"BMv2 file-mode conformance needs p4c + BMv2: {FILES_WHY}")
@pytest.mark.parametrize("which", ["quickstart", "sample", "stress"])
def test_bmv2_file_mode_conformance(which: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """chimera.p4 on simple_switch (pcap in, pcap out): every verdict equals the reference's."""
    from test_ebpf import _artifact
    from chimera.experiments.runner import ROOT
    from chimera.targets.bmv2.files import run_files
    if which == "sample":
        sample = request.getfixturevalue("sample_dir")
        art, ds, _ = _artifact({"path": str(sample), "synthetic": None}, tmp_path / "data")
        table = ds.table
    elif which == "stress":
        art, _, _ = _artifact(None, ROOT / "data", flow_slots=64)
        table = read_pcap(write_stress_pcap(tmp_path / "stress.pcap", seed=3, packets=1500))
    else:
        art, ds, pp = _artifact(None, ROOT / "data")
        table = ds.table.take(pp.replay_rows[:3000])
    r = run_files(art, table, tmp_path / "bmv2")
    assert r.received == r.sent == len(table)
    assert r.mismatches == {f: 0 for f in r.mismatches}
