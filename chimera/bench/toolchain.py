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

from chimera.bench.results import ROOT, BenchResult, bench_run
from chimera.errors import ChimeraError, ConfigError, ToolMissingError

log = logging.getLogger(__name__)


def tests() -> tuple[str, ...]:
    """The conformance tests of the target this bench is recorded for (chimera.bench.BENCHES)."""
    from chimera.bench import BENCHES
    return ("tests/test_conformance.py", "-k", str(BENCHES["toolchain"].target))


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
                              compiles=False)
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
        finally:
            os.environ["PATH"] = old
        if res.compiles:
            xml = run.path / "junit.xml"
            with open(run.path / "tests.log", "w") as out:
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests(),
                                f"--junitxml={xml}"], cwd=ROOT, env={**os.environ, "PATH": path}, stdout=out,
                               stderr=subprocess.STDOUT)
            res.tests_passed, res.tests_failed, res.tests_skipped, res.failed = _junit(xml)
        res.seconds = time.perf_counter() - t0
        run.manifest.put("result", res)
        (run.path / "summary.md").write_text(
            f"# Toolchain: {res.p4c_version} with BMv2 {res.bmv2_version}\n\n"
            f"- chimera.p4 compiles: {'yes' if res.compiles else 'no'}\n"
            f"- p4c's P4Info equals the committed one: "
            f"{'—' if res.p4info_matches is None else 'yes' if res.p4info_matches else 'no'}\n"
            f"- BMv2 conformance tests: {res.tests_passed} passed, {res.tests_failed} failed, "
            f"{res.tests_skipped} skipped\n" + "".join(f"  - failed: `{x}`\n" for x in res.failed))
    log.info("toolchain %s: compiles %s, P4Info %s, tests %d passed / %d failed / %d skipped (%s)",
             res.p4c_version, res.compiles, res.p4info_matches, res.tests_passed, res.tests_failed,
             res.tests_skipped, run.final)
    return res
