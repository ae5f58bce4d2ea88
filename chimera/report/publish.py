"""``invoke publish RUN_DIR``: a run's light files into ``results/published/``, which is committed.

The README cites only published runs, so a reader of a clone can open every number's evidence. A run is
published only when its manifest shows it was made from committed code: a clean tree at a commit that is an
ancestor of HEAD. What is copied: the manifest, the report and summaries, every CSV table except per-packet
ones (``*.csv.gz``, ``verdicts.csv``), and the figures; never pcaps, artifacts or the replay directories
(the manifest keeps their hashes). ``tests/test_readme.py`` checks that every run the README names is here
and that the numbers it quotes are in the run's tables.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

from chimera.errors import ResultsError
from chimera.formats.rundir import Manifest

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "results" / "published"
#: per-packet tables stay behind (their summaries are published)
PER_PACKET = ("verdicts.csv",)
LIGHT_SUFFIXES = (".csv", ".md", ".json", ".png", ".svg")
MAX_FILE_BYTES = 5 * 2**20


def _is_ancestor(commit: str, root: Path) -> bool:
    r = subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=root, capture_output=True)
    return r.returncode == 0


def light_files(run: Path) -> list[Path]:
    """The files of ``run`` a reader needs (relative paths), in a stable order."""
    out = []
    for p in sorted(run.rglob("*")):
        rel = p.relative_to(run)
        if not p.is_file() or rel.parts[0] in ("artifacts", "replay", "switch", "work", "testbed") or \
                p.name in PER_PACKET or p.name.endswith(".csv.gz") or p.suffix not in LIGHT_SUFFIXES:
            continue
        if p.stat().st_size > MAX_FILE_BYTES:
            log.warning("publish: %s left out (%.1f MiB: not a light file)", rel, p.stat().st_size / 2**20)
            continue
        out.append(rel)
    return out


def publish(run_dir: Path, dest_root: Path = PUBLISHED, root: Path = ROOT) -> Path:
    """Copy ``run_dir``'s light files to ``dest_root/<experiment>/<run-id>/``; refuses a run made from a dirty
    tree or from a commit HEAD does not contain."""
    man_path = run_dir / "manifest.json"
    if not man_path.is_file():
        raise ResultsError(f"{run_dir} is not a run directory (no manifest.json)", "give results/<experiment>/<run-id>")
    m = Manifest.read(man_path)
    if m.status != "complete":
        raise ResultsError(f"{run_dir}: the run is {m.status}, not complete", "publish a complete run")
    if m.git.commit is None:
        raise ResultsError(f"{run_dir}: the manifest records no git commit", "re-run it from a git checkout")
    if m.git.dirty:
        raise ResultsError(f"{run_dir} was made from a tree with uncommitted changes (at {m.git.commit[:10]})",
                           "commit the code, re-run, then publish the new run")
    if not _is_ancestor(m.git.commit, root):
        raise ResultsError(f"{run_dir} was made at {m.git.commit[:10]}, which HEAD does not contain",
                           "publish runs made from this branch's history only")
    dest = dest_root / m.experiment / m.run_id
    if dest.exists():
        shutil.rmtree(dest)
    for rel in light_files(run_dir):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run_dir / rel, dest / rel)
    log.info("published %s -> %s (%d files)", run_dir, dest, sum(1 for _ in dest.rglob("*") if _.is_file()))
    return dest
