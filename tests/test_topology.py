"""One machine, one process with testbeds up at a time: another process waits (Mininet names would clash);
within a process several may be up at once (the fuzzer drives eBPF and BMv2 side by side)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chimera.testbed import topology
from chimera.testbed.nodes import TargetSwitch

#: brings up testbeds: runs on the one worker of the group "testbed" (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("testbed")

HOLD = textwrap.dedent("""
    import logging, sys
    from pathlib import Path
    from chimera.testbed import topology
    from chimera.testbed.nodes import TargetSwitch
    logging.basicConfig(level=logging.INFO)
    d = Path(sys.argv[1])
    topology.STATE_DIR = d
    tb = topology.Testbed(TargetSwitch, d, d)
    tb._take_lock()
    (d / "other-up").touch()
    tb._release_lock()
""")


def _appears(p: Path, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if p.exists():
            return True
        time.sleep(0.05)
    return p.exists()


def test_another_process_waits_and_this_one_nests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topology, "STATE_DIR", tmp_path)
    first = topology.Testbed(TargetSwitch, tmp_path, tmp_path)
    second = topology.Testbed(TargetSwitch, tmp_path, tmp_path)
    first._take_lock()
    second._take_lock()  # the same process: no wait (a deadlock here would hang the fuzzer)
    assert (tmp_path / topology.LOCK_NAME).read_text() == f"pid {os.getpid()}"
    foreign = {k: v for k, v in os.environ.items() if k != topology.LOCK_OWNER_ENV}  # not one of our tree's
    other = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stderr=subprocess.PIPE, text=True,
                             env=foreign)
    try:
        # it says it waits once it has found the lock taken (on a loaded machine its imports alone took longer than
        # the fixed 1.5 s this test once waited, and it then found the lock free: the release came first)
        assert other.stderr is not None
        said = ""
        while "another process has a testbed up on this machine" not in said:
            line = other.stderr.readline()
            assert line, f"it ended without waiting:\n{said}"
            said += line
        assert not (tmp_path / "other-up").exists(), "another process came up beside this one's testbeds"
        first._release_lock()
        assert not _appears(tmp_path / "other-up", 1.0), "it came up while one of this process's testbeds was up"
        second._release_lock()
        assert _appears(tmp_path / "other-up", 120), "it never came up after this process's testbeds went down"
        other.communicate(timeout=120)
        assert other.returncode == 0
    finally:
        other.kill()


def test_a_child_of_the_holder_nests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A subprocess of the process holding the machine (a test's Ctrl-C run while a fixture's testbed is up)
    must not wait for its own parent: it would wait forever."""
    monkeypatch.setattr(topology, "STATE_DIR", tmp_path)
    held = topology.Testbed(TargetSwitch, tmp_path, tmp_path)
    held._take_lock()
    try:
        child = subprocess.run([sys.executable, "-c", HOLD, str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert child.returncode == 0 and (tmp_path / "other-up").exists()
        assert "another process has a testbed up" not in child.stderr
    finally:
        held._release_lock()
    assert topology.LOCK_OWNER_ENV not in os.environ
