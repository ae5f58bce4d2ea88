"""One testbed at a time per machine: a second waits for the first (Mininet names would clash otherwise)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from chimera.testbed import topology
from chimera.testbed.nodes import TargetSwitch


def test_a_second_testbed_waits_for_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(topology, "STATE_DIR", tmp_path)
    first = topology.Testbed(TargetSwitch, tmp_path, tmp_path)
    second = topology.Testbed(TargetSwitch, tmp_path, tmp_path)
    first._take_lock()
    got = threading.Event()
    t = threading.Thread(target=lambda: (second._take_lock(), got.set()), daemon=True)
    t.start()
    assert not got.wait(0.5), "the second testbed came up while the first held the machine"
    first._release_lock()
    assert got.wait(10), "the second testbed never came up after the first went down"
    assert "another testbed is up on this machine" in caplog.text
    assert (tmp_path / topology.LOCK_NAME).read_text().startswith("pid ")
    second._release_lock()
    t.join(1)
