"""The hypervisor's steal time over a span, as a timing run records it per trial (chimera.testbed.steal)."""

from __future__ import annotations

from pathlib import Path

from chimera.testbed.steal import CpuTimes, cpu_times, steal_share

#: two /proc/stat readings: 200 ticks pass, 50 of them stolen (the per-CPU lines are ignored)
BEFORE = "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 50 0 25 400 5 0 0 20 0 0\nintr 1\n"
AFTER = "cpu  160 0 70 860 10 0 0 90 7 0\ncpu0 80 0 35 430 5 0 0 45 0 0\nintr 2\n"


def test_the_share_stolen_between_two_readings(tmp_path: Path) -> None:
    a, b = CpuTimes.parse(BEFORE), CpuTimes.parse(AFTER)
    assert (a.steal, a.total) == (40, 1000) and (b.steal, b.total) == (90, 1190)   # guest time is inside user
    assert steal_share(a, b) == 50 / 190
    assert steal_share(b, b) is None and steal_share(None, b) is None   # no tick passed; no reading
    old = CpuTimes.parse("cpu  1 2 3 4\n")   # a kernel without the steal column
    assert (old.steal, old.total) == (0, 10)
    p = tmp_path / "stat"
    p.write_text(AFTER)
    assert cpu_times(p) == b and cpu_times(tmp_path / "absent") is None


def test_this_machine_reads() -> None:
    now = cpu_times()
    assert now is None or 0 <= now.steal <= now.total
