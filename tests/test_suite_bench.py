"""The suite bench's reading of pytest's output and of the README's test command (the timing itself is a bench's,
never a test's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chimera.bench.suite import parse, readme_command
from chimera.errors import ConfigError

OUT = """\
........s...F                                                     [100%]
============================= slowest 3 durations =============================
124.59s call     tests/test_registries.py::test_a_toy
64.63s call     tests/test_shards.py::test_ray[ebpf]
0.50s setup    tests/test_sweep.py::test_x
=========================== short test summary info ============================
SKIPPED [2] tests/test_conformance.py:162: bmv2 cannot run here: p4c-bm2-ss not installed
SKIPPED [1] tests/test_bmv2.py:73: BMv2 tests need p4c + BMv2: simple_switch_grpc not installed
352 passed, 3 skipped, 1 failed, 27 warnings, 2 errors in 377.44s (0:06:17)
"""


def test_counts_skips_and_slowest_are_read_from_pytest_output() -> None:
    got = parse(OUT)
    assert got["counts"] == {"passed": 352, "skipped": 3, "failed": 1, "error": 2}
    assert [s["tests"] for s in got["skips"]] == [2, 1]
    assert got["skips"][0] == {"tests": 2, "where": "tests/test_conformance.py:162",
                               "reason": "bmv2 cannot run here: p4c-bm2-ss not installed"}
    assert [(s["seconds"], s["phase"]) for s in got["slowest"]] == [(124.59, "call"), (64.63, "call"), (0.5, "setup")]


def test_the_command_is_the_readmes(tmp_path: Path) -> None:
    assert readme_command().endswith("invoke test")  # this checkout's README
    bad = tmp_path / "README.md"
    bad.write_text("    scripts/bootstrap && .venv/bin/invoke test\n    scripts/bootstrap && invoke test\n")
    with pytest.raises(ConfigError, match="found 2"):
        readme_command(bad)
