"""One row of the p4c/BMv2 version matrix (issue 36): does chimera.p4 hold on this toolchain?

``invoke bench --what toolchain [--p4c DIR] [--switch DIR]`` takes the p4c-bm2-ss in ``--p4c``'s directory and
the BMv2 in ``--switch``'s (private builds' ``bin`` directories; default: the ones on PATH; a private BMv2 finds
the PI it was built against through its own run path), and records, for that pair:

1. the versions (``p4c-bm2-ss --version``, ``simple_switch_grpc --version``);
2. whether chimera.p4 compiles for the quickstart's artifact, in a build directory of its own (the compile cache
   is keyed by source, not by compiler: another p4c's JSON is never reused here);
3. whether p4c's P4Info equals the committed contract (``invoke p4info --check``'s comparison);
4. the BMv2 conformance tests (``tests/test_conformance.py``, the BMv2 cases), run with that p4c first on PATH:
   every verdict and register equal to the reference's.

Where ``--p4c``'s directory also holds p4c's Tofino backend (``p4c-barefoot``, scripts/build-tofino-compiler),
the row adds that backend's verdict on the quickstart's TNA program (issue 57): its version, whether it fits, the
stages it spans, or the compiler's own words where it refuses. Where a build records itself beside its binaries
(``PREFIX/share/chimera-toolchain.json``, written by scripts/build-bmv2 and scripts/build-tofino-compiler), the row
carries that record: the pinned sources, and each step's wall and CPU time summed over its attempts.

The README's matrix is rendered from the published runs of this bench, one row per p4c version. No toolchain
code, binary or recipe is in the repository: build the versions yourself (docs/bmv2-diet.md names the ones
checked) and point ``--p4c`` at each.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from chimera.bench.results import ROOT, BenchResult, bench_run
from chimera.errors import ChimeraError, ConfigError, ToolMissingError

if TYPE_CHECKING:
    from chimera.formats.artifact import Artifact

log = logging.getLogger(__name__)


def tests() -> tuple[str, ...]:
    """The conformance tests of the target this bench is recorded for (chimera.bench.BENCHES)."""
    from chimera.bench import BENCHES
    return ("tests/test_conformance.py", "-k", str(BENCHES["toolchain"].target))


class BuildStep(BaseModel):
    """One step of a private build, summed over its attempts (a build resumed across sessions has several)."""
    step: str
    seconds: int
    status: str
    cpu_seconds: int = 0
    attempts: int = 1
    cpu_recorded: bool = False      # every attempt recorded its CPU time (older build scripts did not)


class BuildRecord(BaseModel):
    """What a private build recorded beside its binaries (PREFIX/share/chimera-toolchain.json)."""
    sources: dict[str, str]         # repository -> the pinned commit built
    steps: list[BuildStep] = []
    tools: dict[str, str | None] = {}

    @property
    def seconds(self) -> int:
        return sum(s.seconds for s in self.steps)

    @property
    def cpu_seconds(self) -> int | None:
        """The CPU time of every step, or None where a step did not record it."""
        return sum(s.cpu_seconds for s in self.steps) if all(s.cpu_recorded for s in self.steps) else None

    def took(self) -> str:
        """Its wall time and, where every step recorded it, its CPU time, in hours."""
        cpu = self.cpu_seconds
        return f"{self.seconds / 3600:.1f} h" + ("" if cpu is None else f" ({cpu / 3600:.1f} h CPU)")


def build_record(binary: str | Path) -> BuildRecord | None:
    """The build record beside ``binary`` (its prefix's share/chimera-toolchain.json), or None."""
    p = Path(binary).resolve().parent.parent / "share" / "chimera-toolchain.json"
    try:
        return BuildRecord.model_validate_json(p.read_text())
    except (OSError, ValidationError):
        return None


class TofinoCheck(BaseModel):
    """p4c's Tofino backend on the quickstart's TNA program: its verdict (chimera.targets.tofino)."""
    backend: str                    # the p4c-barefoot binary
    version: str
    fits: bool
    reason: str = ""                # the compiler's own words where it refuses
    stages_used: int | None = None
    stages_available: int | None = None

    @property
    def first_reason(self) -> str:
        """The compiler's first line of refusal."""
        return next((ln for ln in self.reason.splitlines() if ln.strip()), "no reason printed")

    def verdict(self) -> str:
        return (f"fits, {self.stages_used} of {self.stages_available} stages" if self.fits
                else "does not fit")


class ToolchainResult(BenchResult):
    p4c: str                   # the p4c-bm2-ss binary
    p4c_version: str
    switch: str = ""           # the simple_switch_grpc binary (older runs: the one on PATH, unrecorded)
    bmv2_version: str
    compiles: bool
    compile_error: str = ""
    p4info_matches: bool | None = None   # None: not compared (it did not compile)
    p4info_diffs: list[str] = []
    tests_passed: int = 0
    tests_failed: int = 0
    tests_skipped: int = 0
    failed: list[str] = []
    seconds: float = 0.0
    p4c_build: BuildRecord | None = None      # the record beside p4c's binaries, where its build wrote one
    switch_build: BuildRecord | None = None
    tofino: TofinoCheck | None = None         # None: no Tofino backend beside this p4c

    @property
    def passes(self) -> bool:
        return bool(self.compiles and self.p4info_matches and self.tests_passed and not self.tests_failed)


def _version(binary: str) -> str:
    try:
        r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    out = (r.stdout or r.stderr).strip().splitlines()
    return out[-1].strip() if out else "unknown"


def _junit(path: Path) -> tuple[int, int, int, list[str]]:
    """(passed, failed, skipped, failed test ids) from pytest's JUnit XML."""
    if not path.exists():
        return 0, 0, 0, []
    passed = failed = skipped = 0
    names = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            failed += 1
            names.append(f"{case.get('classname', '')}::{case.get('name', '')}")
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, names


def _first_on_path(path: str, option: str, build: Path | None, binary: str, what: str) -> str:
    """PATH with ``build`` (a bin directory holding ``binary``) in front of it."""
    if build is None:
        return path
    if not (Path(build) / binary).is_file():
        raise ConfigError(f"{option} {build}: no {binary} in that directory",
                          f"give the bin directory of a {what} build (the one holding {binary})")
    return f"{Path(build).resolve()}{os.pathsep}{path}"


def tofino_check(art: "Artifact", bin_dir: Path, build_dir: Path) -> TofinoCheck | None:
    """The Tofino backend beside p4c (``bin_dir``, first on PATH here) on ``art``'s TNA program, or None where
    there is none."""
    from chimera.targets.tofino import TofinoTarget
    from chimera.targets.tofino.compiler import BACKEND
    backend = bin_dir / BACKEND
    if not backend.is_file():
        return None
    try:
        rep = TofinoTarget().report_resources(art, build_dir)
    except ChimeraError as e:   # the driver beside it cannot run: say so in the row, not as "does not fit"
        log.error("the Tofino backend in %s cannot run: %s", bin_dir, e)
        return TofinoCheck(backend=str(backend), version=_version(str(backend)), fits=False,
                           reason=f"the compile could not run: {e}")
    used, available = rep.columns.get("stages_used"), rep.columns.get("stages_available")
    log.info("Tofino backend %s: %s", rep.compiler, "fits" if rep.fits else f"refuses: {rep.reason[:500]}")
    return TofinoCheck(backend=str(backend), version=rep.compiler, fits=rep.fits, reason=rep.reason[-4000:],
                       stages_used=None if used is None else int(used),
                       stages_available=None if available is None else int(available))


def main(results_root: str | Path = "results", p4c: Path | None = None, switch: Path | None = None) -> ToolchainResult:
    path = _first_on_path(os.environ.get("PATH", ""), "--switch", switch, "simple_switch_grpc", "BMv2")
    path = _first_on_path(path, "--p4c", p4c, "p4c-bm2-ss", "p4c")
    binary = shutil.which("p4c-bm2-ss", path=path)
    server = shutil.which("simple_switch_grpc", path=path)
    if binary is None or server is None:
        raise ToolMissingError("p4c-bm2-ss or simple_switch_grpc is not installed",
                               "build p4c and BMv2 (docs/reproducibility.md, 'For reviewers'), then --p4c DIR and --switch DIR for the builds to check")
    t0 = time.perf_counter()
    with bench_run("toolchain", {"p4c": binary, "switch": server, "tests": " ".join(tests())}, results_root) as run:
        res = ToolchainResult(p4c=binary, p4c_version=_version(binary), switch=server, bmv2_version=_version(server),
                              compiles=False, p4c_build=build_record(binary), switch_build=build_record(server))
        old = os.environ["PATH"]
        os.environ["PATH"] = path  # the compile and P4Info steps below find this p4c first
        try:
            from chimera.experiments.load import build_artifact
            from chimera.targets.bmv2.compiler import compile_p4
            from chimera.targets.bmv2.p4info_check import check_against_p4c
            art = build_artifact("quickstart").art
            with tempfile.TemporaryDirectory(prefix="chimera-toolchain-") as tmp:
                try:
                    compile_p4(art, Path(tmp) / "compile")
                    res.compiles = True
                except ChimeraError as e:
                    res.compile_error = str(e)[-2000:]
                    log.error("chimera.p4 does not compile with %s: %s", res.p4c_version, res.compile_error)
                if res.compiles:
                    res.p4info_diffs = check_against_p4c(art, Path(tmp) / "compile")  # the JSON above, cached
                    res.p4info_matches = not res.p4info_diffs
                res.tofino = tofino_check(art, Path(binary).parent, Path(tmp) / "tofino")
        finally:
            os.environ["PATH"] = old
        if res.compiles:
            xml = run.path / "junit.xml"
            run_tests(path, xml, run.path / "tests.log")
            res.tests_passed, res.tests_failed, res.tests_skipped, res.failed = _junit(xml)
        res.seconds = time.perf_counter() - t0
        run.manifest.put("result", res)
        (run.path / "summary.md").write_text(
            f"# Toolchain: {res.p4c_version} with BMv2 {res.bmv2_version}\n\n"
            f"- chimera.p4 compiles: {'yes' if res.compiles else 'no'}\n"
            f"- p4c's P4Info equals the committed one: "
            f"{'—' if res.p4info_matches is None else 'yes' if res.p4info_matches else 'no'}\n"
            f"- BMv2 conformance tests: {res.tests_passed} passed, {res.tests_failed} failed, "
            f"{res.tests_skipped} skipped\n" + "".join(f"  - failed: `{x}`\n" for x in res.failed)
            + tofino_line(res.tofino) + build_lines("p4c", res.p4c_build) + build_lines("BMv2", res.switch_build))
    log.info("toolchain %s: compiles %s, P4Info %s, tests %d passed / %d failed / %d skipped (%s)",
             res.p4c_version, res.compiles, res.p4info_matches, res.tests_passed, res.tests_failed,
             res.tests_skipped, run.final)
    return res


def run_tests(path: str, xml: Path, out_log: Path) -> None:
    """The BMv2 conformance tests with ``path`` first, under the machine's testbed lock taken here, before pytest
    starts: another run's testbed (a night, an experiment) is waited for here, unbounded and logged, and the tests
    nest in this process's hold, so no test's timeout counts a wait for someone else's run (two tests of a row
    once failed on nothing but that wait)."""
    from chimera.testbed.topology import PROCESS_LOCK
    PROCESS_LOCK.acquire()
    try:
        with open(out_log, "w") as out:
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests(),
                            f"--junitxml={xml}"], cwd=ROOT, env={**os.environ, "PATH": path}, stdout=out,
                           stderr=subprocess.STDOUT)
    finally:
        PROCESS_LOCK.release()


def tofino_line(t: TofinoCheck | None) -> str:
    """The summary's line for the Tofino backend's verdict."""
    if t is None:
        return ""
    said = "" if t.fits else f": `{t.first_reason[:300]}`"
    return f"- the Tofino backend ({t.version}): the TNA program {t.verdict()}{said}\n"


def build_lines(what: str, b: BuildRecord | None) -> str:
    """The summary's lines for a build's record: its time, and the sources it pinned."""
    if b is None:
        return ""
    return (f"- {what} built here in {b.took()}" + ("" if b.cpu_seconds is not None
                                                    else " (CPU time not recorded by every step)")
            + " from " + ", ".join(f"{k} {v[:10]}" for k, v in sorted(b.sources.items())) + "\n")
