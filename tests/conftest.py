"""Shared fixtures: the real CICIoT2022 sample (workplace-only), the bundled pcaps, small synthetic datasets."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the test files that take longest, in the order they start (longest-processing-time first): `invoke test` runs
#: xdist with --dist loadfile and --no-loadscope-reorder, so files are handed out in collection order. xdist's own
#: order is by test count, which left few-test long files (the reproducibility trainings, mypy, the latency ladder)
#: to start last while the other workers had finished. The order is each file's time in a full parallel run on
#: this project's 2-core machine, longest first, except that test_bmv2 and test_clock lead: with BMv2 they take
#: minutes. Only when a file starts changes, never what a test checks; a file not listed follows them, files with
#: more tests first, as xdist would order them.
LONG_FIRST = ("test_bmv2.py", "test_clock.py", "test_sweep.py", "test_fuzz.py", "test_conformance.py",
              "test_shards.py", "test_ebpf.py", "test_nightly.py", "test_baseline_zoo.py", "test_registries.py",
              "test_latency.py", "test_reproducibility.py", "test_types.py", "test_adaptation.py",
              "test_baselines.py", "test_experiments.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    count = Counter(item.path.name for item in items)
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -count[item.path.name], item.path.name))


SAMPLE = Path(os.environ.get("CHIMERA_SAMPLE", ROOT.parent / "shared" / "datasets" / "ciciot2022-sonos"))


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    if not SAMPLE.is_dir():
        pytest.skip(f"real CICIoT2022 sample not found at {SAMPLE} (set CHIMERA_SAMPLE to its path)")
    return SAMPLE


@pytest.fixture(scope="session")
def synth_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from chimera.data.synthetic import SyntheticSpec, generate
    out = tmp_path_factory.mktemp("ds") / "ciciot-small"
    return generate(SyntheticSpec(profile="ciciot", flows=300, seed=3, duration_s=30,
                                  attacks=("SCAN", "SYN_FLOOD"), attack_share=0.1,
                                  max_packets_per_flow=60), out)


@pytest.fixture(scope="session")
def cic_sample(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> Path:
    from chimera.data.adapters import normalize
    return normalize("ciciot2022", sample_dir, tmp_path_factory.mktemp("ds") / "cic")


@pytest.fixture(scope="session")
def tiny_multiclass(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pcaps/tiny-multiclass normalized with the generic folder adapter (bundled: never skipped)."""
    from chimera.data.adapters import normalize
    from builders import TINY_MULTICLASS
    return normalize("folders", TINY_MULTICLASS, tmp_path_factory.mktemp("ds") / "tiny")


@pytest.fixture
def machine_to_ourselves() -> Iterator[None]:
    """The machine's testbed lock for the whole test: no other testbed (another xdist worker's) comes up or goes
    down meanwhile, so what a test finds new in the kernel's tables is its own; its subprocesses nest in it. A test
    that loads our programs outside a testbed takes it too, so such a check never counts them."""
    from chimera.testbed.topology import PROCESS_LOCK
    PROCESS_LOCK.acquire()
    try:
        yield
    finally:
        PROCESS_LOCK.release()
