"""The suite's own mechanics (tests/conftest.py): every test runs in a group, a file's tests together and the testbed
files' tests on one worker; every collected test is one the file defines."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

TESTBED = "testbed"


def _group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return None if mark is None else str(mark.args[0] if mark.args else mark.kwargs.get("name"))


def test_every_test_runs_in_its_files_group_or_the_testbed_group(request: pytest.FixtureRequest) -> None:
    """A test file is one group (its module fixtures built once); a file whose tests are mostly testbeds says so
    with the ``testbed`` group, and all of its tests carry it (a file mostly outside its testbeds, as the toys', keeps
    its own group: its testbeds wait for the machine-wide lock instead of the testbed worker waiting for it)."""
    groups: dict[str, set[str | None]] = {}
    for item in request.session.items:
        groups.setdefault(item.path.name, set()).add(_group(item))
    assert all(None not in g for g in groups.values()), {f: g for f, g in groups.items() if None in g}
    mixed = {f: g for f, g in groups.items() if len(g) != 1 or g not in ({f}, {TESTBED})}
    assert mixed == {}
    assert groups.get("test_scheduling.py") == {"test_scheduling.py"}
    assert all(groups[f] == {TESTBED} for f in ("test_ebpf.py", "test_conformance.py", "test_clock.py") if f in groups)
    # and xdist sees them: under --dist loadgroup a test's id carries its group (pytest 9.2 dropped it silently,
    # pytest-xdist issue 1386, and every test ran on any worker: pyproject pins pytest below 9.2)
    if request.config.getoption("dist", "no") == "loadgroup":  # (in-process, `invoke test --workers 0`: no xdist)
        bare = [i.nodeid for i in request.session.items if not i.nodeid.endswith(f"@{_group(i)}")]
        assert bare == [], bare[:3]


class _Config:
    """What xdist's load-group scheduler reads of pytest's config: three workers, the groups in the order of their
    first tests (`invoke test` passes --no-loadscope-reorder; tests/conftest.py orders them), or by size."""

    def __init__(self, reorder: bool = False) -> None:
        self.option = SimpleNamespace(loadscopereorder=reorder, dist="loadgroup")

    def getvalue(self, name: str) -> Any:
        return {"tx": ["3*popen"], "dist": "loadgroup"}[name]

    getoption = getvalue


class _Worker:
    """What the scheduler reads of and sends to an xdist worker; ``queue`` is what it was sent and has not run."""

    def __init__(self, n: int) -> None:
        self.gateway = SimpleNamespace(id=f"gw{n}")
        self.shutting_down = False
        self.queue: list[int] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.queue += indexes

    def shutdown(self) -> None:
        self.shutting_down = True


def _schedule(collection: list[str], reorder: bool = False) -> tuple[list[str], dict[str, set[str]]]:
    """The tests in the order three workers ran them (each finishing its next test in turn), and each group's
    workers."""
    sched = LoadGroupScheduling(_Config(reorder), None)  # type: ignore[arg-type]
    workers = [_Worker(n) for n in range(3)]
    for w in workers:
        sched.add_node(w)
        sched.add_node_collection(w, collection)
    sched.schedule()
    where: dict[str, set[str]] = {}
    ran: list[str] = []
    while any(w.queue for w in workers):
        for w in workers:
            if w.queue:
                i = w.queue.pop(0)
                ran.append(collection[i])
                where.setdefault(collection[i].rsplit("@", 1)[1], set()).add(w.gateway.id)
                sched.mark_test_complete(w, i)
    return ran, where


def test_the_testbed_group_runs_on_one_worker_while_the_others_take_the_files() -> None:
    files = {"test_ebpf.py": TESTBED, "test_clock.py": TESTBED, "test_topology.py": TESTBED,
             "test_nightly.py": "test_nightly.py", "test_types.py": "test_types.py", "test_rules.py": "test_rules.py"}
    collection = [f"tests/{f}::t{i}@{g}" for f, g in files.items() for i in range(3)]
    ran, where = _schedule(collection)
    assert sorted(ran) == sorted(collection)  # every test ran once
    assert all(len(w) == 1 for w in where.values()), where  # each group on one worker: the testbed files together
    assert len(set().union(*where.values())) == 3  # and the other workers took the other files meanwhile


def test_every_collected_test_is_defined_in_its_own_file(request: pytest.FixtureRequest) -> None:
    """A helper whose name starts with ``test`` and is imported into a test file is collected there as a test of
    its own (builders' lock helper once was: a "passed" test that checked nothing, run once per importing file)."""
    strays = [item.nodeid for item in request.session.items
              if isinstance(item, pytest.Function) and item.function.__module__ != item.module.__name__]
    assert strays == []


class _Item:
    """What tests/conftest.py's collection hook reads of and sets on a collected test."""

    def __init__(self, file: str, n: int, mark: str | None = None, group: str | None = None) -> None:
        self.path = Path(file)
        self.nodeid = f"tests/{file}::t{n}"
        self.marks = {} if mark is None else {mark: getattr(pytest.mark, mark).mark}
        if group is not None:
            self.add_marker(pytest.mark.xdist_group(group))

    def get_closest_marker(self, name: str) -> Any:
        return self.marks.get(name)

    def add_marker(self, mark: Any) -> None:
        self.marks[mark.name] = mark.mark

    @property
    def scheduled_id(self) -> str:
        return f"{self.nodeid}@{self.marks['xdist_group'].args[0]}"


def test_a_long_tests_group_is_handed_out_first_then_the_largest() -> None:
    """A group of one long test (the toys') was handed out last, by size, and ran alone for a minute after every
    other worker had finished. The collection hook puts the groups with a ``long`` test first, then the larger."""
    from conftest import pytest_collection_modifyitems
    items = ([_Item("test_rules.py", i) for i in range(2)] + [_Item("test_ebpf.py", i, group=TESTBED) for i in range(4)]
             + [_Item("test_nightly.py", i) for i in range(3)] + [_Item("test_toys.py", 0, mark="long")]
             + [_Item("test_clock.py", i, group=TESTBED) for i in range(2)])
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    collection = [i.scheduled_id for i in items]
    assert [c.split("::")[0] for c in collection] == ["tests/test_toys.py"] + ["tests/test_ebpf.py"] * 4 + [
        "tests/test_clock.py"] * 2 + ["tests/test_nightly.py"] * 3 + ["tests/test_rules.py"] * 2
    ran, where = _schedule(collection)
    assert ran[0] == "tests/test_toys.py::t0@test_toys.py" and where["test_toys.py"] == {"gw0"}
    assert where[TESTBED] == {"gw1"}  # the testbed group (the largest) starts at once beside it
    # xdist's own order (by size) hands the long test's group out last: what --no-loadscope-reorder turns off
    by_size = _schedule(collection, reorder=True)[0]
    starts = {g: min(n for n, c in enumerate(by_size) if c.endswith(f"@{g}")) for g in where}
    assert max(starts, key=starts.__getitem__) == "test_toys.py"
