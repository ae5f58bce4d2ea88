"""The suite's own mechanics (tests/conftest.py): files that bring up testbeds take turns, so the cores keep busy;
every collected test is one the file defines."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from conftest import TESTBED_FILES, TESTBED_WORKERS, pytest_xdist_make_scheduler


class _Config:
    """What xdist's load-file scheduler reads of pytest's config: three workers, collection order kept."""

    option = SimpleNamespace(loadscopereorder=False, dist="loadfile")

    def getvalue(self, name: str) -> Any:
        return {"tx": ["3*popen"], "dist": "loadfile"}[name]

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


def test_at_most_two_workers_run_testbed_files_while_other_files_wait() -> None:
    testbed = list(TESTBED_FILES[:4])
    files = testbed + ["test_nightly.py", "test_types.py", "test_rules.py", "test_formats.py"]
    collection = [f"tests/{f}::t{i}" for f in files for i in range(3)]
    sched = pytest_xdist_make_scheduler(_Config(), None)  # type: ignore[arg-type]
    workers = [_Worker(n) for n in range(3)]
    for w in workers:
        sched.add_node(w)
        sched.add_node_collection(w, collection)
    sched.schedule()
    ran: list[str] = []
    peak = 0
    while any(w.queue for w in workers):
        running = {w for w in workers for i in w.queue if collection[i].split("/")[1].split("::")[0] in testbed}
        left = [s for s in sched.workqueue if s.split("/")[1] not in testbed]
        if left:  # other files are still to start: the testbed files are on at most TESTBED_WORKERS workers
            assert len(running) <= TESTBED_WORKERS, (len(running), left)
            peak = max(peak, len(running))
        for w in workers:  # each worker finishes its next test, in turn
            if w.queue:
                i = w.queue.pop(0)
                ran.append(collection[i])
                sched.mark_test_complete(w, i)
    assert sorted(ran) == sorted(collection)  # every test ran once
    assert peak == TESTBED_WORKERS  # and meanwhile that many ran side by side


def test_every_collected_test_is_defined_in_its_own_file(request: pytest.FixtureRequest) -> None:
    """A helper whose name starts with ``test`` and is imported into a test file is collected there as a test of
    its own (builders' lock helper once was: a "passed" test that checked nothing, run once per importing file)."""
    strays = [item.nodeid for item in request.session.items
              if isinstance(item, pytest.Function) and item.function.__module__ != item.module.__name__]
    assert strays == []
