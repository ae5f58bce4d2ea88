"""BMv2: what only this target has (the fail-fast path where it is absent, the file-mode harness, installs
that read the switch's entries back). Conformance over P4Runtime is tests/test_conformance.py, written once for
every target. Runs where p4c-bm2-ss and simple_switch_grpc are installed; skips elsewhere with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chimera.data.pcap import read_pcap
from chimera.errors import ToolMissingError
from chimera.targets.bmv2 import Bmv2Target
from chimera.targets.bmv2.files import unavailable_reason as files_unavailable_reason
from chimera.targets.registry import select_target
from chimera.testbed.replay import ReplayConfig

from builders import STRESS_PCAP, assert_conformant, quickstart_artifact

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

WHY = Bmv2Target.unavailable_reason()
FILES_WHY = files_unavailable_reason()
PACED = ReplayConfig(clock="switch", mode="pps", pps=300)


@pytest.mark.skipif(WHY is None, reason="BMv2 is installed here: the fail-fast path does not apply")
def test_bmv2_target_fails_fast_naming_what_to_install() -> None:
    """The refusal is the target's own reason, naming whichever of its tools is missing (a half-installed
    toolchain lacks p4c-bm2-ss, a bare machine simple_switch_grpc too), or root, and the fix."""
    with pytest.raises(ToolMissingError) as ei:
        select_target("bmv2")
    said = str(ei.value)
    assert WHY is not None and WHY in said and "fix:" in said
    assert re.search(r"p4c-bm2-ss|simple_switch_grpc|not running as root", said)


needs_bmv2 = pytest.mark.skipif(WHY is not None, reason=f"BMv2 tests need p4c + BMv2: {WHY}")


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    with Bmv2Target(build_dir=tmp_path_factory.mktemp("build")) as t:
        yield t


_check = assert_conformant


def test_file_mode_gives_the_egress_queue_room_for_every_frame(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen in the suite bench: 18 of a real capture's 8,492 frames never left simple_switch, whose egress queue
    holds 64 frames by default and drops when full; the file is read unpaced and a loaded host's egress lags. The
    install now sets the queue depth to the frame count first. Checked on the commands sent (no BMv2 needed): a
    drop needs a slow enough egress, which no test can arrange reliably."""
    from chimera.targets.bmv2 import files
    sent: list[list[str]] = []

    def cli(commands: list[str], *a: object, **k: object) -> str:
        sent.append(commands)
        if commands == ["show_tables"]:
            return "port_map"
        raise RuntimeError("stop after the install")

    from types import SimpleNamespace
    switch = SimpleNamespace(poll=lambda: None, terminate=lambda: None, wait=lambda timeout: 0)  # a running switch
    monkeypatch.setattr(files, "run_cli", cli)
    with pytest.raises(RuntimeError, match="stop after the install"):
        files._drive(switch, quickstart_artifact().art, 8492, tmp_path / "out.pcap", tmp_path, 60)  # type: ignore[arg-type]
    install = sent[1]
    depth = [int(c.split()[1]) for c in install if c.startswith("set_queue_depth ")]
    assert depth and depth[0] >= 8492 and install.index(f"set_queue_depth {depth[0]}") == 0


@pytest.mark.skipif(FILES_WHY is not None, reason=f"BMv2 file-mode conformance needs p4c + BMv2: {FILES_WHY}")
@pytest.mark.parametrize("which", ["quickstart", "sample", "stress", "fast-path", "limits"])
def test_bmv2_file_mode_conformance(which: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """chimera.p4 on simple_switch (pcap in, pcap out): every verdict equals the reference's."""
    from chimera.targets.bmv2.files import run_files
    if which == "sample":
        sample = request.getfixturevalue("sample_dir")
        built = quickstart_artifact(tmp_path / "data", dataset={"path": str(sample), "synthetic": None})
        art, table = built.art, built.data.ds.table
    elif which == "stress":
        art, table = quickstart_artifact(flow_slots=64).art, read_pcap(STRESS_PCAP)
    elif which == "limits":  # the fuzzer's `max` profile: m = d_v = 16 fill the 512-bit rows (p4c once refused)
        from chimera.fuzz.profiles import artifact
        art, table = artifact("max"), read_pcap(STRESS_PCAP)
        assert art.c("D_V") == 16 and art.c("RF_FEATURES") == 16
    elif which == "fast-path":  # the class prior on, and the two-shift EMA step (eta = 2^-2 + 2^-4)
        built = quickstart_artifact(fusion={"gamma": 4.0, "tune_beta": False}, compile={"ema_eta": 0.3})
        art, table = built.art, built.data.ds.table.take(built.data.replay_rows[:3000])
        assert art.c("GAMMA") > 0 and art.c("EMA_SHIFT2") == 4
    else:
        built = quickstart_artifact()
        art, table = built.art, built.data.ds.table.take(built.data.replay_rows[:3000])
    r = run_files(art, table, tmp_path / "bmv2")
    assert r.received == r.sent == len(table), r
    assert r.verdict_mismatches == 0
    assert r.register_mismatches == 0


@needs_bmv2
@pytest.mark.root
@pytest.mark.parametrize("held", ["read-back"])
def test_bmv2_conformance_across_live_installs(held: str, target: Bmv2Target, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Installs that read the switch's entries back (the path taken after a failed install): the node forgets
    what each version holds, so every install reads the version's entries back and diffs against them; every
    verdict and register still equals the reference replayed on the switch's version record. (The cached path
    is the conformance test's.)"""
    import numpy as np

    from chimera.controlplane.config import ControlPlaneConfig
    from chimera.controlplane.loop import SlowLoop
    from chimera.targets.bmv2 import p4rt
    if held == "read-back":
        real = p4rt.sync_version
        monkeypatch.setattr("chimera.targets.bmv2.node.sync_version",
                            lambda sw, art, ver, _held, **kw: real(sw, art, ver, None, **kw))
    built = quickstart_artifact()
    table = built.data.ds.table.take(built.data.replay_rows[:1500])
    loop = SlowLoop(built.art, ControlPlaneConfig(t_cp_s=1.0, tau_map=0.0, min_samples=16, rebin="all"))
    # on the trace clock the loop decides on trace time, so how many installs happen does not depend on how busy
    # the machine is (on the switch clock a slow install left room for one only; how long an install takes is
    # the install bench's to measure)
    res = target.run(built.art, table, tmp_path, f"live-{held}", replay=PACED.with_clock("trace"), control=loop)
    _check(res, len(table))
    inst = [s for s in loop.steps if s.decision == "install"]
    assert len(inst) >= 2 and all(s.install_ms > 0 and not s.error for s in inst)
    assert len(np.unique(res.verdicts.map_version)) >= 2
