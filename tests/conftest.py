"""Shared fixtures: the real CICIoT2022 sample (workplace-only), the bundled pcaps, small synthetic datasets."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Ray starts its workers at nice 15 (its `worker_niceness`), below every other process here. In a full run the
#: other xdist workers keep both cores busy, and a Ray task got almost no CPU: with three busy processes beside
#: it, the two-node shards test's workers took 95 s to import the project instead of 13 s at nice 0, and a task
#: inside a hold on the testbed lock kept every other testbed waiting that long. The tests' Ray instances (and
#: those of the subprocesses they start) run their workers at the priority of the rest of the suite.
os.environ.setdefault("RAY_worker_niceness", "0")

@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`invoke test` runs xdist with --dist loadgroup: a test with an ``xdist_group`` mark runs on its group's one
    worker (the testbed files share the group "testbed": their testbeds take turns through the machine-wide lock
    anyway, and one worker running them leaves the other workers the cores meanwhile); any other test's group is
    its file, so a file's module fixtures are built once, as with --dist loadfile.

    xdist hands the groups out in the order of their first tests. The groups holding a test marked ``long`` come
    first, then the larger groups (xdist's own order by size, which `invoke test` turns off with
    --no-loadscope-reorder so that this one holds): a group of one long test, handed out last by size, ended the
    suite alone a minute after every other worker had finished. Only where and when a test runs changes, never
    what it checks."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    size = Counter(xdist_group(i) for i in items)
    long = {xdist_group(i) for i in items if i.get_closest_marker("long") is not None}
    items.sort(key=lambda i: (xdist_group(i) not in long, -size[xdist_group(i)]))  # stable: a group's order kept


def xdist_group(item: pytest.Item) -> str:
    """The name of the item's xdist group (every item has one once collection is done)."""
    mark = item.get_closest_marker("xdist_group")
    assert mark is not None, item.nodeid
    return str(mark.args[0] if mark.args else mark.kwargs["name"])


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
    from builders import holding_the_testbed_lock
    with holding_the_testbed_lock():
        yield


@pytest.fixture(autouse=True, scope="session")
def tool_versions_asked_once() -> Iterator[None]:
    """Each run's manifest records every tool's version (chimera.formats.rundir.environment), and a worker makes
    dozens of runs: `mn --version` alone starts a Python (0.2 s of CPU), about 17 s of a suite's CPU in all. A
    tool's version does not change within a session, so a worker asks each tool once, by the path PATH finds it
    at (a test that shadows a tool on PATH gets its own answer). What a manifest records is unchanged."""
    import shutil
    from collections.abc import Sequence

    from chimera.formats import rundir
    real = rundir._first_line
    seen: dict[tuple[tuple[str, ...], str | None], str | None] = {}

    def once(cmd: Sequence[str]) -> str | None:
        key = (tuple(cmd), shutil.which(cmd[0]))
        if key not in seen:
            seen[key] = real(cmd)
        return seen[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rundir, "_first_line", once)
        yield
