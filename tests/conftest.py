"""Shared fixtures: the real CICIoT2022 sample (workplace-only), the bundled pcaps, small synthetic datasets."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Ray starts its workers at nice 15 (its `worker_niceness`), below every other process here. In a full run the
#: other xdist workers keep both cores busy, and a Ray task got almost no CPU: with three busy processes beside
#: it, the two-node shards test's workers took 95 s to import the project instead of 13 s at nice 0, and a task
#: inside a hold on the testbed lock kept every other testbed waiting that long. The tests' Ray instances (and
#: those of the subprocesses they start) run their workers at the priority of the rest of the suite.
os.environ.setdefault("RAY_worker_niceness", "0")

#: the test files that take longest, in the order they start (longest-processing-time first): `invoke test` runs
#: xdist with --dist loadfile and --no-loadscope-reorder, so files are handed out in collection order (xdist's own
#: order is by test count, which left few-test long files to start last), testbed files subject to
#: TESTBED_WORKERS below. The order is each file's time in a full parallel run on this project's 2-core machine,
#: longest first, the testbed files' and the others' each, except that test_bmv2 and test_clock lead: with BMv2
#: they take minutes, and that test_sweep follows two CPU-bound files: most of its time is waits (Ray's start, the
#: testbed lock), and first among the others it left the cores 30-75 % idle from 50 to 85 s in, while the two
#: testbed workers, too, mostly waited on replays. Only when a file starts changes, never what a test checks; a file
#: not listed follows them, files with more tests first, as xdist would order them.
LONG_FIRST = ("test_bmv2.py", "test_clock.py", "test_conformance.py", "test_fuzz.py", "test_shards.py", "test_ebpf.py",
              "test_latency.py", "test_nightly.py", "test_reproducibility.py", "test_sweep.py", "test_registries.py",
              "test_types.py", "test_baseline_zoo.py", "test_baselines.py", "test_adaptation.py", "test_experiments.py")


#: taken by each process that collects the tests, around its first kernel probe (below)
PROBE_LOCK = Path("/tmp/chimera-tests-ebpf-probe.lock")


def pytest_configure(config: pytest.Config) -> None:
    """Probe the kernel for the eBPF target before collection, one collecting process at a time.

    Collection asks EbpfTarget.unavailable_reason(), which compiles the probe program into one shared folder
    under a fixed temporary name and renames it (chimera.targets.ebpf.build._clang). On a machine that has never
    built it, the xdist workers compile it at once, and one worker's rename can take the file another's clang
    wrote: that worker's collection fails (seen once on a fresh Debian running `invoke test` first). Here the
    first process compiles it and the others, waiting for the lock, find it built. The answer is cached per
    process, so collection asks nothing twice. Only xdist's workers collect at once; a single process (and the
    controller, which collects nothing) skips this."""
    if not hasattr(config, "workerinput"):
        return
    import fcntl

    from chimera.targets.ebpf import kernel_probe
    with open(PROBE_LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        kernel_probe()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    count = Counter(item.path.name for item in items)
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), -count[item.path.name], item.path.name))


#: the test files that bring up testbeds. Their testbeds take turns through the machine-wide testbed lock, and
#: while one holds it the cores mostly wait on its replay's pace. With every worker in such a file at once (one
#: holding the lock, the others waiting for it), a full run here left the cores 60-85 % idle for 80 s. test_sweep
#: is not one: one of its tests brings up testbeds (inside Ray tasks), and most of its time is Ray's tasks on the
#: cores.
TESTBED_FILES = ("test_bmv2.py", "test_clock.py", "test_fuzz.py", "test_conformance.py", "test_shards.py",
                 "test_ebpf.py", "test_latency.py", "test_topology.py")
#: how many workers run testbed files at once while other files wait to start: one holds the lock while the other
#: prepares its next testbed (trains, builds, checks); a third would only wait for the lock
TESTBED_WORKERS = 2


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, but a testbed file goes to a worker only while fewer than TESTBED_WORKERS others run
    one, or when no other file is left to start; the remaining workers keep the cores busy meanwhile."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    def testbed(scope: str) -> bool:
        return scope.rsplit("/", 1)[-1] in TESTBED_FILES

    class TestbedTakesTurns(LoadFileScheduling):  # type: ignore[misc]
        def _assign_work_unit(self, node: Any) -> None:
            busy = sum(any(testbed(scope) and not all(done.values()) for scope, done in work.items())
                       for other, work in self.assigned_work.items() if other is not node)
            pick = next((s for s in self.workqueue if not testbed(s) or busy < TESTBED_WORKERS),
                        next(iter(self.workqueue)))
            self.workqueue.move_to_end(pick, last=False)  # the base class starts the queue's first file
            super()._assign_work_unit(node)

    return TestbedTakesTurns(config, log)


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
def ebpf_objects_built_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each eBPF testbed compiles its objects (chimera.targets.ebpf.build) into its test's own build folder, and
    many tests build the same artifact's program. Here each distinct object is compiled once per session, shared
    by the xdist workers, keyed by every input of the compile: the source, the headers beside it, the artifact's
    header, the defines, the flags and the clang found. A miss compiles as before (a mutant's source is its own
    key, and a failing compile or a missing clang raises as before); a hit copies what that compile wrote (the
    header and the object) into the test's build folder, where the build looks for it. Measured over a full
    suite: 75 clang runs (21 s of CPU) became 65 (16 s); the rest are distinct objects or in subprocesses."""
    import hashlib
    import shutil

    from chimera.targets.ebpf import build
    real = build._clang
    session = tmp_path_factory.getbasetemp()
    store = (session.parent if os.environ.get("PYTEST_XDIST_WORKER") else session) / "ebpf-objects"

    def once(source: Path, header: str | None, build_dir: Path, defines: list[str] | None = None) -> Path:
        clang = shutil.which("clang")
        if clang is None:
            return real(source, header, build_dir, defines)
        inputs = [source.read_bytes(), *(h.read_bytes() for h in sorted(build.SOURCE.parent.glob("*.h"))),
                  (header or "").encode(), " ".join(defines or []).encode(), " ".join(build.CFLAGS).encode(),
                  clang.encode()]
        key = hashlib.sha256(b"\0".join(inputs)).hexdigest()
        built = store / key
        if not built.is_dir():
            scratch = store / f"{key}.{os.getpid()}"
            shutil.rmtree(scratch, ignore_errors=True)
            real(source, header, scratch, defines)
            try:
                scratch.rename(built)
            except OSError:  # another worker stored it first: the same inputs, the same object
                shutil.rmtree(scratch, ignore_errors=True)
        (folder,) = built.iterdir()  # the compile's own folder (ebpf-<its key>), as the build names it
        shutil.copytree(folder, build_dir / folder.name, dirs_exist_ok=True)
        return build_dir / folder.name / source.name.replace(".c", ".o")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build, "_clang", once)
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
