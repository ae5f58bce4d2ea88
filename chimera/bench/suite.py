"""The test suite, timed on this machine with every tool it has: the README's test command, BMv2 included where
it is built.

The fresh-check record times the suite on a fresh clone, where BMv2 is absent and its tests skip; this bench times
it where BMv2 runs, and the README quotes both. It runs the test command the README gives (read from it, so the two
cannot drift; the set-up before it is the fresh-check's to time) in this checkout, which must be clean (the record
cites its commit). It records the wall time, pytest's counts, every skip with its reason, the slowest tests, and
which switch targets could run here (each other one with its reason). A failing suite is an error, never a record.
"""

from __future__ import annotations

import logging
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pandas as pd

from chimera.bench.results import ROOT, BenchResult, bench_run
from chimera.errors import ConfigError, ResultsError
from chimera.formats.rundir import git_state
from chimera.targets.registry import describe_all

log = logging.getLogger(__name__)

#: the README's set-up line whose second half is the test command
README_LINE = re.compile(r"^    scripts/bootstrap && (?P<cmd>\S*invoke test)\s*$", re.M)
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
SKIP = re.compile(r"^SKIPPED \[(\d+)\] ([^:]+:\d+): (.*)$", re.M)
SLOW = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)$", re.M)


class SuiteResult(BenchResult):
    wall_s: float
    passed: int
    skipped: int
    command: str
    targets: list[str]                   # the targets that could run here (their tests ran); the others skipped


def readme_command(readme: Path = ROOT / "README.md") -> str:
    """The README's test command (what `.ci/run` runs), from the line that also bootstraps."""
    found = [m["cmd"] for m in README_LINE.finditer(readme.read_text())]
    if len(found) != 1:
        raise ConfigError(f"{readme}: expected one set-up line `scripts/bootstrap && .../invoke test`, found "
                          f"{len(found)}", "keep the README's two set-up commands as the fresh-check reads them")
    return found[0]


def parse(out: str) -> dict[str, Any]:  # JSON out: pytest's summary counts, for the bench's record
    """pytest's counts (the last summary line), its skips by reason and its slowest tests."""
    summary = next((ln for ln in reversed(out.splitlines()) if " in " in ln and COUNTS.search(ln)), "")
    counts = {k.rstrip("s") if k.startswith("error") else k: int(v) for v, k in COUNTS.findall(summary)}
    skips = [{"tests": int(a), "where": b, "reason": c.strip()} for a, b, c in SKIP.findall(out)]
    slow = [{"seconds": float(a), "phase": b, "test": c} for a, b, c in SLOW.findall(out)]
    return {"summary": summary, "counts": counts, "skips": skips, "slowest": slow}


def main(results_root: str | Path = "results") -> SuiteResult:
    git = git_state(ROOT)
    if git.dirty or git.commit is None:
        raise ConfigError("the suite bench times the committed code, and this checkout has uncommitted changes",
                          "commit (or stash) them first")
    cmd = readme_command()
    why = describe_all()
    runnable = sorted(t for t, w in why.items() if w is None)
    params = {"command": cmd, "skipped": {t: str(w) for t, w in why.items() if w is not None}}
    with bench_run("suite", params, results_root) as run:
        log.info("[suite] %s (targets that can run here: %s)", cmd, ", ".join(runnable) or "none")
        t0 = time.monotonic()
        r = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        (run.path / "pytest.log").write_text(r.stdout + r.stderr)
        got = parse(r.stdout)
        c = got["counts"]
        if r.returncode != 0 or c.get("failed", 0) or c.get("error", 0):
            raise ResultsError(f"the suite failed (exit {r.returncode}: {got['summary'] or 'no summary'}); its "
                               f"output (pytest.log) is kept with the failed run under "
                               f"{Path(results_root) / 'bench-suite' / '.failed'}", "fix the failing tests, then time it")
        pd.DataFrame(got["skips"], columns=["tests", "where", "reason"]).to_csv(run.path / "skips.csv", index=False)
        pd.DataFrame(got["slowest"], columns=["seconds", "phase", "test"]).to_csv(run.path / "slowest.csv",
                                                                                 index=False)
        res = SuiteResult(wall_s=round(wall, 1), passed=c.get("passed", 0), skipped=c.get("skipped", 0),
                          command=cmd, targets=runnable)
        run.manifest.put("result", res)
        (run.path / "report.md").write_text(
            f"# The test suite here\n\n`{cmd}`: {res.wall_s:.0f} s wall, {res.passed} passed, {res.skipped} "
            f"skipped; targets that could run: {', '.join(runnable) or 'none'}.\n\n"
            f"pytest: {got['summary']}\n")
        log.info("[suite] %.0f s: %s", wall, got["summary"])
    return res
