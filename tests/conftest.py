"""Shared fixtures: the real CICIoT2022 sample (workplace-only), the bundled pcaps, small synthetic datasets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
