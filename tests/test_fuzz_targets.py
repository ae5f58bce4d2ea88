"""Differential fuzzing on the testbeds (issue 25): a negative EMA register reads back right on every testbed (the
BMv2 Thrift read saturated it: found by the fuzzer), and a mutant planted in the eBPF program is found, shrunk and
re-run to the same difference. A file of its own in the testbed group; the fuzzer's reference and oracle cases are
in test_fuzz.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from chimera.fuzz.check import compare, observe_target
from chimera.fuzz.frames import FrameSpec
from chimera.fuzz.profiles import artifact
from chimera.fuzz.run import FuzzConfig, fuzz
from chimera.fuzz.sequence import Event, Sequence
from chimera.targets.registry import target_class
from chimera.testbed.nodes import BuildOptions

from test_fuzz import _observe_all

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

TESTBEDS = ["ebpf", "bmv2"]


def _negative_ema_sequence() -> Sequence:
    """Two flows interleaved so that one class EMA ends at -1 under the two-shift step (eta = 2^-2 + 2^-4):
    the corner BMv2's Thrift read turned into INT64_MAX."""
    a = FrameSpec(src=0x0A000001, dst=0x0A000002, sport=1111, dport=80, tcp_flags=0x02, payload=0)
    b = FrameSpec(src=0x0A000003, dst=0x0A000004, sport=2222, dport=443, proto=17, payload=100)
    pattern = "bbabbaaaabaabbbbbbbbabbbbbbbbbbbbbbbbbbb"
    return Sequence(tuple(Event(a if c == "a" else b, 1024, c) for c in pattern))


@pytest.mark.parametrize("name", TESTBEDS)
def test_negative_ema_register_reads_back(name: str, tmp_path: Path) -> None:
    cls = target_class(name)
    why = cls.unavailable_reason()
    if why is not None:
        pytest.skip(f"{name} cannot run here: {why}")
    art = artifact("prior")
    b, table, ref = _observe_all(art, [_negative_ema_sequence()], tmp_path)
    assert min(ref.registers["class_ema"]) == -1  # the corner is reached
    with cls(build_dir=tmp_path / "build", build=BuildOptions(coverage=True)) as t:  # type: ignore[call-arg]
        got = observe_target(t, art, table, b.script, tmp_path / "run", "negative-ema")
    assert compare(ref, got) == []


def test_planted_ebpf_mutant_is_killed_and_deterministic(tmp_path: Path) -> None:
    """A mutant left in chimera.bpf.c (an IPv4 header must be 24 bytes) is found on the testbed, traced to its
    sequence, shrunk, and re-run: the same difference every time."""
    cls = target_class("ebpf")
    why = cls.unavailable_reason()
    if why is not None:
        pytest.skip(f"ebpf cannot run here: {why}")
    from chimera.targets.ebpf.build import SOURCE
    src = SOURCE.read_text()
    assert "ihl < 20)" in src
    mutant = tmp_path / "chimera.bpf.c"
    mutant.write_text(src.replace("ihl < 20)", "ihl < 24)", 1))
    res = fuzz(FuzzConfig(targets=("ebpf",), budget_s=90, seed=3, corpus=False, stop_at_first=True, repeats=3,
                          profiles=("collide",), build=BuildOptions(coverage=True, source=mutant)), tmp_path)
    assert res.failures, "the mutant survived"
    f = res.failures[0]
    assert f.diff.target == "ebpf" and f.reproduced.startswith("3/3") and len(f.sequence) <= 3, f.describe()
    assert "--target ebpf --frames as-captured" in f.command
