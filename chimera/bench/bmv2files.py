"""BMv2 alone: frames per second through chimera.p4 in simple_switch's file mode, a source against a baseline.

The BMv2 diet (docs/bmv2-diet.md) changes chimera.p4 one step at a time and keeps a step only when it measurably
helps. The testbed benches (zeroloss, bmv2ratio) climb a coarse ladder of offered rates through veth pairs and
tcpreplay; this one isolates the switch: simple_switch reads the quickstart's test split (4,886 frames, trace
clock) from a pcap as fast as it can, and the span from the first to the last verdict out is its own processing
time. Each repeat runs the shipped source and the source at ``baseline`` (a git revision) back to back, with the
same artifact and entries, and checks every verdict and register against the reference (conformance is part of
the measurement: a faster program that disagrees is not a diet step). Reports the median rate of each and their
ratio; asserts nothing.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pandas as pd

from chimera import paths
from chimera.bench.results import BenchResult, Stat, bench_run, summary
from chimera.errors import ConfigError, ToolMissingError
from chimera.experiments.load import build_artifact
from chimera.targets.bmv2 import files
from chimera.targets.bmv2.schema import P4_SOURCE
from chimera.testbed.nodes import BuildOptions

log = logging.getLogger(__name__)
ROOT = paths.ROOT
REPEATS = 3



class Bmv2FilesResult(BenchResult):
    shipped_fps: Stat
    baseline_fps: Stat
    ratio: float
    conformant: bool


def source_at(rev: str, dest: Path) -> Path:
    """chimera.p4 as it was at git revision ``rev``."""
    r = subprocess.run(["git", "show", f"{rev}:{P4_SOURCE.relative_to(ROOT).as_posix()}"], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ConfigError(f"no chimera.p4 at git revision {rev!r}: {r.stderr.strip()}",
                          "give a commit of this repository (e.g. --baseline HEAD~1)")
    dest.write_text(r.stdout)
    return dest


def main(results_root: str | Path = "results", baseline: str = "HEAD~1", repeats: int = REPEATS) -> Bmv2FilesResult:
    why = files.unavailable_reason()
    if why:
        raise ToolMissingError(f"BMv2 file mode cannot run: {why}", files.INSTALL_HINT)
    built = build_artifact("quickstart")
    table = built.data.replay_table
    rev = subprocess.run(["git", "rev-parse", baseline], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with bench_run("bmv2files", {"baseline": baseline, "baseline_commit": rev, "repeats": repeats,
                                 "frames": len(table)}, results_root) as run:
        base = source_at(baseline, run.path / "baseline.p4")
        rows = []
        for i in range(repeats):
            for name, build in (("shipped", BuildOptions()), ("baseline", BuildOptions(source=base))):
                r = files.run_files(built.art, table, run.path / f"{name}-{i}", build=build)
                rows.append({"repeat": i, "source": name, "frames": r.sent, "checked": r.received,
                             "verdict_mismatches": r.verdict_mismatches,
                             "register_mismatches": r.register_mismatches, "span_s": r.out_span_s,
                             "fps": r.sent / r.out_span_s if r.out_span_s > 0 else float("nan")})
                log.info("[bmv2files] %s, repeat %d: %.0f frames/s, %d verdicts and %s registers differ", name, i,
                         rows[-1]["fps"], r.verdict_mismatches, r.register_mismatches)
        df = pd.DataFrame(rows)
        df.to_csv(run.path / "bmv2files.csv", index=False)
        med = {k: summary(g["fps"].tolist()) for k, g in df.groupby("source")}
        res = Bmv2FilesResult.model_validate({
            "shipped_fps": med["shipped"], "baseline_fps": med["baseline"],
            "ratio": med["shipped"]["median"] / med["baseline"]["median"],
            "conformant": bool((df["verdict_mismatches"] == 0).all() and (df["register_mismatches"] == 0).all())})
        run.manifest.put("result", res)
        (run.path / "report.md").write_text(
            f"# BMv2 file mode: chimera.p4 as shipped against {baseline} ({rev[:12]})\n\n"
            f"{len(table)} frames (the quickstart's test split, trace clock), {repeats} alternating repeats.\n\n"
            + df.to_markdown(index=False, floatfmt=".4f") + "\n\n"
            f"Median frames/s: shipped {med['shipped']['median']:.1f}, baseline {med['baseline']['median']:.1f}; "
            f"ratio {res.ratio:.4f}; every verdict and register equal to the reference: {res.conformant}.\n")
    log.info("bmv2files: shipped %.0f fps, %s %.0f fps, ratio %.3f (%s)", med["shipped"]["median"], baseline,
             med["baseline"]["median"], res.ratio, run.final)
    return res
