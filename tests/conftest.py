"""Shared fixtures: the real CICIoT2022 sample (workplace-only), the bundled pcaps, small synthetic datasets; and
how ``invoke test`` spreads the tests over its workers."""

from __future__ import annotations

import os
import warnings
from collections import Counter
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


# ------------------------------------------------------------------------------------------- the workers' shares
TESTBED_GROUP = "testbed"
#: the node ids of the tests marked ``testbed`` (as collected, before xdist adds a group to them)
_MARKED: set[str] = set()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` (invoke test): the tests marked ``testbed`` form one group, run first and one after
    another on one worker; every other test file is a group of its own (its module fixtures built once, as under
    loadfile). Testbeds take turns through the machine-wide lock anyway: spread over every worker, as loadfile
    spread their files, the workers waiting on the lock did nothing while the cores idled. This way one worker
    owns the lock and the others keep the cores busy. The largest file groups follow, as xdist would order them."""
    _MARKED.update(item.nodeid for item in items if item.get_closest_marker("testbed"))
    if config.getoption("dist", "no") != "loadgroup":
        return
    size = Counter(item.path.name for item in items)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(TESTBED_GROUP if item.nodeid in _MARKED else item.path.name))
    items.sort(key=lambda item: (item.nodeid not in _MARKED, -size[item.path.name], item.path.name))


class UnmarkedTestbedWarning(UserWarning):
    """A test took the testbed lock without the ``testbed`` mark: it waits for the lock on a worker that could run
    other tests (the suite is slower, not wrong)."""


@pytest.fixture(scope="session", autouse=True)
def _testbed_marks_are_kept() -> Iterator[None]:
    """Warn when a test without the ``testbed`` mark (or its fixture) takes the machine's testbed lock in this
    process, so a new testbed test is not left to wait on a worker of its own."""
    from chimera.testbed import topology
    lock, real, state_dir = topology.PROCESS_LOCK, topology.PROCESS_LOCK.acquire, topology.STATE_DIR

    def acquire() -> None:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0].split("@")[0]
        if test and test not in _MARKED and topology.STATE_DIR == state_dir:  # not a test's own temporary lock
            warnings.warn(UnmarkedTestbedWarning(f"{test} takes the testbed lock: mark it @pytest.mark.testbed "
                                                 "(tests/conftest.py)"), stacklevel=2)
        real()
    lock.acquire = acquire  # type: ignore[method-assign]
    try:
        yield
    finally:
        lock.acquire = real  # type: ignore[method-assign]
