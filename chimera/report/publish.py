"""``invoke publish RUN_DIR``: a run's light files into ``results/published/``, which is committed.

The README cites only published runs, so a reader of a clone can open every number's evidence. A run is
published only when its manifest shows it was made from committed code: a clean tree at a commit that is an
ancestor of HEAD, and so is every run nested in it (a night's or a bench's ``runs/``), at the same commit. The
published manifest records the fingerprint of the run's own code at that commit (``code_fingerprint``, of the
run's scope: chimera.report.provenance), the one the book judges a run's freshness by (the book recomputes it
from git; the record is for a reader). What is copied: the manifest, the report and summaries, every CSV table
except per-packet ones (``*.csv.gz``, ``verdicts.csv``), and the figures; never pcaps, artifacts or the replay
directories, at any depth (the manifest keeps their hashes), nor the figures of a nested run. ``tests/test_readme.py`` checks that every run the
README names is here and that the numbers it quotes are in the run's tables.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field

from chimera import paths
from chimera.errors import ResultsError
from chimera.formats.rundir import Manifest
from chimera.report.provenance import EVERYTHING, RULES_FILE, Scope, file_digest_at, fingerprint_at

log = logging.getLogger(__name__)
ROOT = paths.ROOT
PUBLISHED = ROOT / "results" / "published"
#: per-packet tables stay behind (their summaries are published)
PER_PACKET = ("verdicts.csv",)
LIGHT_SUFFIXES = (".csv", ".md", ".json", ".png", ".svg")
#: directories whose files stay behind wherever they are (a nested run has its own)
HEAVY_DIRS = frozenset(("artifacts", "replay", "switch", "work", "testbed"))
MAX_FILE_BYTES = 5 * 2**20
#: where a run keeps the runs it made (their figures stay behind: ``_nested_figure``)
NESTED = "runs"
#: where a sweep keeps each task's tables and outcome: it stays behind, since the sweep's merged tables hold every
#: task's rows (with ``sweep_task``; the merge is bit-identical, tests/test_sweep.py) and its manifest every task's
#: outcome; a sweep of 180 cells would otherwise publish each row twice
SWEEP_TASKS = "tasks"


#: the files a seal covers: the tables the book reads, and the manifests of the runs nested in a run
SEALED_SUFFIXES = (".csv", ".json", ".gz")
#: a table larger than this is published gzipped (``<name>.csv.gz``; readers take either: ``table_file``): a day
#: of control ticks over 10 seeds and 3 day realizations is megabytes of CSV, a tenth of that gzipped, and the
#: archive has a budget (chimera.report.archive)
GZIP_FROM_BYTES = 256 * 2**10
SEAL = "published"


class Seal(BaseModel):
    """The content hash of each published table (path relative to the run -> sha256), so that a table edited
    after publishing is refused by every reader of the book (``check_seal``); and the digest of the verdict
    rules at the run's commit (None: the run predates the rules file), which the ledger's gating reads from git."""
    files: dict[str, str] = Field(default_factory=dict)
    rules: str | None = None


def seal_of(run: Path) -> Seal:
    """The seal of a published run directory as it is now (its top manifest left out: the seal lives there)."""
    return Seal(files={p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                       for p in sorted(run.rglob("*")) if p.is_file() and p.suffix in SEALED_SUFFIXES
                       and p != run / "manifest.json"})


def check_seal(run: Path, m: Manifest) -> None:
    """Refuse a published run whose tables differ from the seal its manifest records (a run without a seal, as
    a reproduction's or a night's own runs, is not checked)."""
    raw = m.sections.get(SEAL)
    if raw is None:
        return
    want = Seal.model_validate(raw).files
    now = seal_of(run).files
    bad = sorted(k for k in set(want) | set(now) if want.get(k) != now.get(k))
    if bad:
        raise ResultsError(f"{run}: {', '.join(bad[:5])} differ from what was published (the manifest's seal)",
                           "restore the run from git (git checkout -- PATH); a new result is a new run, published")


def _is_ancestor(commit: str, root: Path) -> bool:
    r = subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=root, capture_output=True)
    return r.returncode == 0


def gzip_file(src: Path, dest: Path) -> None:
    """``src`` gzipped to ``dest``, the same bytes for the same table (no name or time in the header: the seal
    and git see one content)."""
    with src.open("rb") as fi, dest.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                                      mtime=0) as fo:
        shutil.copyfileobj(fi, fo)


def light_png(src: Path, dest: Path) -> None:
    """``src`` as a 256-colour palette PNG at ``dest`` where that is smaller (a figure of a dozen coloured lines
    is about a quarter of its RGBA size; the numbers it draws are in the run's tables, which are copied as they
    are): the published tree has a budget (chimera.report.archive.BUDGET_BYTES)."""
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(src) as im:
            im.convert("RGB").quantize(256).save(dest, "PNG", optimize=True)
    except (UnidentifiedImageError, OSError):   # not a PNG it can read: published as it is
        shutil.copy2(src, dest)
        return
    if dest.stat().st_size >= src.stat().st_size:
        shutil.copy2(src, dest)


def table_file(run: Path, name: str) -> Path | None:
    """Where a run directory holds the table ``name``: as written, or gzipped by ``publish`` (None: neither)."""
    for p in (run / name, run / f"{name}.gz"):
        if p.is_file():
            return p
    return None


def _nested_figure(rel: Path) -> bool:
    """A figure of a run nested in ``runs/`` (a bench's repeated ladders, a night's experiments): no page shows
    it, the outer run draws its own from the same tables, and ten ladders' plots outweigh their tables."""
    dirs = rel.parts[:-1]
    return "figures" in dirs and NESTED in dirs[:dirs.index("figures")]


def light_files(run: Path, sweep: bool = False, sealed: frozenset[str] = frozenset()) -> list[Path]:
    """The files of ``run`` a reader needs (relative paths), in a stable order; ``sweep``: a sweep's run, whose
    ``tasks/`` stays behind (``SWEEP_TASKS``); ``sealed``: the files an already published run's seal lists (its
    tables gzipped by ``publish`` are kept, though a run's own ``*.csv.gz`` are per-packet files left behind)."""
    out = []
    for p in sorted(run.rglob("*")):
        rel = p.relative_to(run)
        if rel.as_posix() in sealed and p.is_file():
            out.append(rel)
            continue
        if sweep and rel.parts[0] == SWEEP_TASKS:
            continue
        if not p.is_file() or HEAVY_DIRS.intersection(rel.parts[:-1]) or \
                p.name in PER_PACKET or p.name.endswith(".csv.gz") or p.suffix not in LIGHT_SUFFIXES:
            continue
        if _nested_figure(rel):
            continue
        if p.stat().st_size > MAX_FILE_BYTES:
            log.warning("publish: %s left out (%.1f MiB: not a light file)", rel, p.stat().st_size / 2**20)
            continue
        out.append(rel)
    return out


#: the published manifest's section naming the other commits its nested runs were made at (a resumed sweep)
NESTED_COMMITS = "nested_commits"


class NestedCommits(BaseModel):
    """The nested runs made at a commit other than the run's own (path relative to the run -> commit): a sweep
    resumed after a commit keeps the tasks it had finished, which is allowed only where the code of the run's
    scope is the same at both commits, so the record says where each part came from."""
    runs: dict[str, str]


def nested_problems(run_dir: Path, commit: str, root: Path, scope: Scope) -> tuple[list[str], dict[str, str]]:
    """What is wrong with the runs nested in ``run_dir`` (dirty, unfinished, or made from other code than
    ``commit``'s), and the nested runs made at another commit whose code in ``scope`` is the same as at ``commit``
    (a resumed sweep's finished tasks), by path."""
    out, other = [], {}
    for p in sorted(run_dir.rglob("manifest.json")):
        if p.parent == run_dir:
            continue
        rel = p.parent.relative_to(run_dir).as_posix()
        try:
            m = Manifest.read(p)
        except ResultsError as e:
            out.append(f"{rel}: {e.problem}")
            continue
        if m.status != "complete":
            out.append(f"{rel}: {m.status}")
        if m.git.dirty:
            out.append(f"{rel}: made from a tree with uncommitted changes")
        if m.git.commit == commit:
            continue
        if m.git.commit is None:
            out.append(f"{rel}: made at no commit, not at the run's {commit[:10]}")
            continue
        try:
            theirs = fingerprint_at(m.git.commit, root, scope)
        except ResultsError:
            out.append(f"{rel}: made at {m.git.commit[:10]}, not at the run's {commit[:10]}, and this clone does "
                       "not hold that commit")
            continue
        if theirs != fingerprint_at(commit, root, scope):    # cached: once per run
            out.append(f"{rel}: made at {m.git.commit[:10]}, not at the run's {commit[:10]}, and the run's code "
                       "differs between the two")
        else:
            other[rel] = m.git.commit
    return out, other


def publish(run_dir: Path, dest_root: Path = PUBLISHED, root: Path = ROOT, scope: Scope = EVERYTHING) -> Path:
    """Copy ``run_dir``'s light files to ``dest_root/<experiment>/<run-id>/``; refuses a run made from a dirty
    tree or from a commit HEAD does not contain, or one with such a nested run. ``scope``: where the run's
    code starts (chimera.book.scope.run_scope), for the fingerprint its manifest records."""
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
    bad, other = nested_problems(run_dir, m.git.commit, root, scope)
    if bad:
        raise ResultsError(f"{run_dir}: {len(bad)} nested run(s) are not from the run's clean code: " +
                           "; ".join(bad[:5]), "re-run the whole run from one committed tree, then publish it")
    # an already published run (another clone's results/published/, as invoke republish leaves it): its seal
    # must hold, and every file it lists is published again as it is (seen: its gzipped tables were dropped)
    check_seal(run_dir, m)
    raw = m.sections.get(SEAL)
    sealed = frozenset(Seal.model_validate(raw).files) if raw is not None else frozenset()
    dest = dest_root / m.experiment / m.run_id
    if dest.resolve() == run_dir.resolve():
        raise ResultsError(f"{run_dir} is already published there", "publish a run into another results tree")
    if dest.exists():
        shutil.rmtree(dest)
    for rel in light_files(run_dir, sweep=m.kind == "sweep", sealed=sealed):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        if rel.suffix == ".csv" and (run_dir / rel).stat().st_size > GZIP_FROM_BYTES:
            gzip_file(run_dir / rel, dest / f"{rel}.gz")
        elif rel.suffix == ".png":
            light_png(run_dir / rel, dest / rel)
        else:
            shutil.copy2(run_dir / rel, dest / rel)
    m.record(code_fingerprint=fingerprint_at(m.git.commit, root, scope))
    rules = file_digest_at(m.git.commit, RULES_FILE, root)
    if other:
        log.info("publish: %d nested run(s) were made at another commit with the same code in the run's scope: %s",
                 len(other), ", ".join(sorted({c[:10] for c in other.values()})))
        m.put(NESTED_COMMITS, NestedCommits(runs=other))
    m.put(SEAL, seal_of(dest).model_copy(update={"rules": rules.hex() if rules is not None else None}))
    (dest / "manifest.json").write_text(json.dumps(m.to_json(), indent=2, default=str))
    log.info("published %s -> %s (%d files)", run_dir, dest, sum(1 for _ in dest.rglob("*") if _.is_file()))
    return dest
