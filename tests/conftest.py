"""Shared fixtures: the real CICIoT2022 sample (workplace-only), the bundled pcaps, small synthetic datasets; and the
order test files start in, longest first, from their recorded costs."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COSTS = Path(__file__).with_name("file_costs.json")
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


# --- the order files start in ------------------------------------------------------------------------------------
# xdist hands each worker whole files (`--dist loadfile`). Started in name order, or by test count (xdist's default),
# the few long files (the toy target, the Ray sweeps) began last and ran alone while the other cores idled. Longest
# first is the classic cure (LPT); the costs are each file's measured seconds, recorded by
# `invoke test --store-costs` into tests/file_costs.json. A file with no recorded cost starts first: an unknown
# cost is not assumed small. The order changes when a test runs, never what it checks.

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-costs", action="store_true",
                     help=f"record each test file's seconds (setup, call, teardown) in {COSTS.name}")


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(files: list[str], costs: dict[str, float]) -> list[str]:
    """Files in start order: unknown costs first, then the recorded costs, longest first; ties by name."""
    return sorted(files, key=lambda f: (f in costs, -costs.get(f, 0.0), f))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    costs = json.loads(COSTS.read_text()) if COSTS.is_file() else {}
    rank = {f: i for i, f in enumerate(longest_first(list(dict.fromkeys(file_of(i.nodeid) for i in items)), costs))}
    items.sort(key=lambda i: rank[file_of(i.nodeid)])  # stable: a file's own tests keep their order


_SPENT: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SPENT[file_of(report.nodeid)] += max(report.duration, 0.0)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With --store-costs, the controller (not an xdist worker, which saw only its share) records the costs; a file
    not run this time keeps its old cost."""
    config = session.config
    if not config.getoption("--store-costs") or hasattr(config, "workerinput") or not _SPENT:
        return
    old = {f: s for f, s in (json.loads(COSTS.read_text()) if COSTS.is_file() else {}).items() if (ROOT / f).is_file()}
    COSTS.write_text(json.dumps({**old, **{f: round(s, 1) for f, s in _SPENT.items()}}, indent=1, sort_keys=True) + "\n")
