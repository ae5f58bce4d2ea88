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
COSTS = Path(__file__).with_name("test_costs.json")
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
# first is the classic cure (LPT). The costs are each test's measured seconds (setup, call and teardown), recorded
# by `invoke test --store-costs` into tests/test_costs.json, only for tests that ran: a test that skipped on the
# recording machine (BMv2's, where BMv2 is absent) keeps the cost another machine recorded, or has none. A file
# with a test of no recorded cost starts first: an unknown cost is not assumed small. The order changes when a test
# runs, never what it checks.

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-costs", action="store_true",
                     help=f"record each test's seconds (setup, call, teardown) in {COSTS.name}, for tests that ran")


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def start_order(nodeids: list[str], costs: dict[str, float]) -> list[str]:
    """Files in start order: those with a test of unknown cost first, then by their tests' summed cost, longest
    first; ties by name."""
    known: defaultdict[str, float] = defaultdict(float)
    unknown: set[str] = set()
    for nid in nodeids:
        if nid in costs:
            known[file_of(nid)] += costs[nid]
        else:
            unknown.add(file_of(nid))
    return sorted(dict.fromkeys(file_of(n) for n in nodeids), key=lambda f: (f not in unknown, -known[f], f))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    costs = json.loads(COSTS.read_text()) if COSTS.is_file() else {}
    rank = {f: i for i, f in enumerate(start_order([i.nodeid for i in items], costs))}
    items.sort(key=lambda i: rank[file_of(i.nodeid)])  # stable: a file's own tests keep their order


_SPENT: defaultdict[str, float] = defaultdict(float)
_SKIPPED: set[str] = set()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SPENT[report.nodeid] += max(report.duration, 0.0)
    if report.skipped:
        _SKIPPED.add(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """With --store-costs, the controller (not an xdist worker, which saw only its share) records the costs of the
    tests that ran; the others keep theirs, unless their file is gone."""
    config = session.config
    if not config.getoption("--store-costs") or hasattr(config, "workerinput"):
        return
    old = json.loads(COSTS.read_text()) if COSTS.is_file() else {}
    new = {n: round(s, 2) for n, s in _SPENT.items() if n not in _SKIPPED}
    keep = {n: s for n, s in old.items() if (config.rootpath / file_of(n)).is_file()}
    COSTS.write_text(json.dumps({**keep, **new}, indent=0, sort_keys=True) + "\n")
