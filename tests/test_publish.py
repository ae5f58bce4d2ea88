"""Published runs (issue 21): only runs made from committed code are published, and only their light files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chimera.errors import ResultsError
from chimera.report.provenance import Scope, _tree_files, closure, fingerprint_at
from chimera.report.publish import publish

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp: Path, commit: str | None, dirty: bool = False, status: str = "complete") -> Path:
    d = tmp / "exp" / "20260101-000000-reference"
    (d / "figures").mkdir(parents=True)
    (d / "replay").mkdir()
    (d / "manifest.json").write_text(json.dumps({"experiment": "exp", "run_id": d.name, "target": "reference",
                                                 "status": status, "git": {"commit": commit, "dirty": dirty}}))
    (d / "ablation.csv").write_text("variant,macro_f1\nChimera,0.8968\n")
    (d / "packets.csv.gz").write_bytes(b"\x1f\x8b")
    (d / "replay" / "replay-trace-0.pcap").write_bytes(b"x")
    (d / "figures" / "f1.png").write_bytes(b"png")
    (d / "report.md").write_text("# r")
    return d


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


#: a small scope that few commits touch
SMALL = Scope(("chimera.errors",))


def _code_pairs(scope: Scope) -> tuple[tuple[str, str], tuple[str, str]]:
    """Two (commit, parent) pairs from history: one where the commit kept ``scope``'s code as the fingerprint sees
    it, one where it changed it (a docstring edit does not count), newest first."""
    files = sorted(closure(scope, _tree_files(ROOT)))
    changed = next(c for c in _git("log", "--format=%H", "HEAD", "--", *files).split()
                   if fingerprint_at(c, ROOT, scope) != fingerprint_at(f"{c}~1", ROOT, scope))
    kept = next(c for c in _git("log", "--format=%H", "-50", "HEAD").split()
                if fingerprint_at(c, ROOT, scope) == fingerprint_at(f"{c}~1", ROOT, scope))
    return (kept, _git("rev-parse", f"{kept}~1")), (changed, _git("rev-parse", f"{changed}~1"))


def test_publish_copies_light_files_of_committed_runs_only(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    run = _run(tmp_path, head)
    dest = publish(run, tmp_path / "published")
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == ["ablation.csv", "figures/f1.png", "manifest.json", "report.md"]
    with pytest.raises(ResultsError, match="uncommitted changes"):
        publish(_run(tmp_path / "d", head, dirty=True), tmp_path / "published")
    with pytest.raises(ResultsError, match="HEAD does not contain"):
        publish(_run(tmp_path / "a", "0" * 40), tmp_path / "published")
    with pytest.raises(ResultsError, match="running, not complete"):
        publish(_run(tmp_path / "s", head, status="running"), tmp_path / "published")
    # the published manifest says which code made it, and seals its tables
    published = json.loads((dest / "manifest.json").read_text())
    assert published["code_fingerprint"]
    assert set(published["sections"]["published"]["files"]) == {"ablation.csv"}
    from chimera.report.provenance import RULES_FILE, file_digest_at   # the verdict rules at the run's commit
    assert published["sections"]["published"]["rules"] == file_digest_at(head, RULES_FILE, ROOT).hex()  # type: ignore[union-attr]


def test_publish_keeps_figures_light(tmp_path: Path) -> None:
    """A figure is published as a 256-colour PNG where that is smaller (the published tree has a budget; a day of
    a dozen configurations drew a 300 KB figure), with its size in pixels kept; a file that is not an image it
    can read is copied as it is (seen failing with the figure copied unchanged)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    run = _run(tmp_path, head)
    fig, ax = plt.subplots(figsize=(8, 4))
    rng = np.random.default_rng(1)
    for i in range(12):
        ax.fill_between(range(48), rng.random(48), rng.random(48) + 1, alpha=0.15)
        ax.plot(rng.random(48), marker="o")
    fig.savefig(run / "figures" / "f1.png", dpi=150)
    (run / "figures" / "not-a.png").write_bytes(b"png")
    dest = publish(run, tmp_path / "published")
    src, out = run / "figures" / "f1.png", dest / "figures" / "f1.png"
    assert out.stat().st_size < src.stat().st_size / 2
    with Image.open(src) as a, Image.open(out) as b:
        assert a.size == b.size
    assert (dest / "figures" / "not-a.png").read_bytes() == b"png"


def _nest(run: Path, commit: str | None, dirty: bool = False) -> None:
    d = run / "runs" / "quickstart" / "20260101-000001-reference"
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"experiment": "quickstart", "run_id": d.name, "target": "reference",
                                                 "status": "complete", "git": {"commit": commit, "dirty": dirty}}))


def test_publish_refuses_a_dirty_or_foreign_nested_run(tmp_path: Path) -> None:
    """A night is only as clean as every run it made (issue 32: nights whose sub-runs were dirty were published)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    _, (_, other_code) = _code_pairs(SMALL)
    dirty = _run(tmp_path / "d", head)
    _nest(dirty, head, dirty=True)
    with pytest.raises(ResultsError, match="uncommitted changes"):
        publish(dirty, tmp_path / "published")
    foreign = _run(tmp_path / "f", head)
    _nest(foreign, other_code)
    with pytest.raises(ResultsError, match="not at the run's"):
        publish(foreign, tmp_path / "published", scope=SMALL)
    clean = _run(tmp_path / "c", head)
    _nest(clean, head)
    nested = clean / "runs" / "quickstart" / "20260101-000001-reference"
    (nested / "artifacts" / "full").mkdir(parents=True)   # a nested run's artifacts stay behind too
    (nested / "artifacts" / "full" / "tables.json").write_text("{}")
    (nested / "report.md").write_text("# nested")
    (nested / "figures").mkdir()              # a nested run's figures stay behind; the outer run's own are kept
    (nested / "figures" / "throughput.png").write_bytes(b"png")
    (clean / "figures").mkdir(exist_ok=True)
    (clean / "figures" / "zeroloss.svg").write_text("<svg/>")
    dest = publish(clean, tmp_path / "published")
    out = dest / "runs" / "quickstart" / nested.name
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["manifest.json", "report.md"]
    assert (dest / "figures" / "zeroloss.svg").is_file()


def test_a_nested_run_from_another_commit_is_published_only_where_the_runs_code_is_the_same(tmp_path: Path) -> None:
    """A sweep resumed after a commit keeps the tasks it had finished (the resume checked that the code of its
    scope had not changed): publishing it must accept them, say so in the manifest, and still refuse tasks whose
    code differs (a resumed sweep of session 34 was refused for tasks made at the commit before its pull)."""
    from chimera.report.publish import NESTED_COMMITS
    (kept, same), (changed, before) = _code_pairs(SMALL)
    run = _run(tmp_path / "s", kept)
    _nest(run, same)
    dest = publish(run, tmp_path / "published", scope=SMALL)
    recorded = json.loads((dest / "manifest.json").read_text())["sections"][NESTED_COMMITS]["runs"]
    assert recorded == {"runs/quickstart/20260101-000001-reference": same}
    old = _run(tmp_path / "o", changed)
    _nest(old, before)
    with pytest.raises(ResultsError, match="code differs"):
        publish(old, tmp_path / "published", scope=SMALL)
    unknown = _run(tmp_path / "u", kept)
    _nest(unknown, "0" * 40)
    with pytest.raises(ResultsError, match="does not hold that commit"):
        publish(unknown, tmp_path / "published", scope=SMALL)


def test_a_large_table_is_published_gzipped_sealed_and_read_as_written(tmp_path: Path) -> None:
    """A table over ``GZIP_FROM_BYTES`` (a factorial day's control log) is published as ``<name>.csv.gz``: the
    same bytes for the same table (no time in the header), sealed like the others, and read back by the book
    (``Run.csv``) and by the run's own view (``RunView.table``) exactly as written. Small tables stay plain."""
    import gzip

    import pandas as pd

    from chimera.book.scope import run_set
    from chimera.experiments.kinds.stability.tables import CONTROL
    from chimera.report.publish import GZIP_FROM_BYTES, check_seal
    from chimera.report.run import RunView
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    run = _run(tmp_path, head)
    rows = max(1, GZIP_FROM_BYTES // 40)
    big = pd.DataFrame({k: range(rows) for k in CONTROL.keys} | {"note": ["x" * 30] * rows})
    big.to_csv(run / CONTROL.name, index=False)
    dest = publish(run, tmp_path / "published")
    assert (dest / f"{CONTROL.name}.gz").is_file() and not (dest / CONTROL.name).exists()
    assert (dest / "ablation.csv").is_file()                     # small: as written
    assert gzip.decompress((dest / f"{CONTROL.name}.gz").read_bytes()) == (run / CONTROL.name).read_bytes()
    first = (dest / f"{CONTROL.name}.gz").read_bytes()
    assert publish(run, tmp_path / "published") and (dest / f"{CONTROL.name}.gz").read_bytes() == first
    published = json.loads((dest / "manifest.json").read_text())
    assert f"{CONTROL.name}.gz" in published["sections"]["published"]["files"]
    r = run_set(tmp_path / "published", ROOT).need("exp")
    assert r.has_csv(CONTROL.name) and r.csv(CONTROL.name).equals(pd.read_csv(run / CONTROL.name))
    assert RunView.open(dest).table(CONTROL).equals(pd.read_csv(run / CONTROL.name))
    (dest / f"{CONTROL.name}.gz").write_bytes(gzip.compress(b"edited\n1\n"))
    with pytest.raises(ResultsError):
        check_seal(dest, RunView.open(dest).manifest)


def test_a_sweep_leaves_its_tasks_behind(tmp_path: Path) -> None:
    """A sweep publishes its merged tables and its manifest (every task's outcome), not each task's copy of the
    same rows: a 180-cell sweep would otherwise publish them twice and push the archive over its budget (seen
    failing with the tasks published). A run of another kind keeps a folder of that name."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for kind, kept in (("sweep", False), ("variants", True)):
        run = _run(tmp_path / kind, head)
        m = json.loads((run / "manifest.json").read_text())
        (run / "manifest.json").write_text(json.dumps({**m, "kind": kind}))
        task = run / "tasks" / "seed11-chimera"
        task.mkdir(parents=True)
        (task / "ablation.csv").write_text("variant,macro_f1\nChimera,0.8968\n")
        (task / "outcome.json").write_text("{}")
        dest = publish(run, tmp_path / kind / "published")
        assert (dest / "tasks").exists() == kept and (dest / "ablation.csv").is_file()


def test_a_nights_overridden_run_never_stands_for_the_experiment() -> None:
    """The book's freshest run of an experiment may be a night's nested run, unless the night ran that experiment
    at another size (its suite's overrides: a night-sized grid checks bits, it is not the measurement). Seen
    failing with the override ignored: the stability claim was judged on 3 seeds of one day instead of 30."""
    from types import SimpleNamespace

    from chimera.report.runs import RunSet

    def run(exp: str, run_id: str, nested: tuple = (), overrides: dict | None = None) -> SimpleNamespace:
        return SimpleNamespace(experiment=exp, run_id=run_id, freshness=SimpleNamespace(fresh=True),
                               nested=lambda: list(nested), manifest=SimpleNamespace(
                                   sections={"nightly": {"suite": {"overrides": overrides or {}}}}))
    full = run("stability24h", "20261129-021257-reference")
    small, quick = run("stability24h", "20261129-171844-reference"), run("quickstart", "20261129-171217-bmv2")
    night = run("nightly", "20261129-171147-local", (small, quick), {"stability24h": {"stability": {"seeds": [11]}}})
    rs = RunSet.__new__(RunSet)
    rs._runs = [full, run("quickstart", "20261128-000000-bmv2"), night]  # type: ignore[list-item]
    assert rs.freshest("stability24h") is full
    assert rs.freshest("quickstart") is quick      # a run the night made at the experiment's own size still counts


def test_the_publish_task_names_a_path_that_is_no_run(tmp_path: Path) -> None:
    """`invoke publish WRONG_PATH` says the path is no run directory and exits 2 (it raised a traceback from the
    scope lookup before publish's own check; seen failing with the task's check removed)."""
    import sys
    out = subprocess.run([sys.executable, "-m", "invoke", "publish", str(tmp_path / "nowhere")], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "is not a run directory (no manifest.json)" in out.stderr and "Traceback" not in out.stderr


def test_a_published_run_published_again_keeps_every_sealed_file(tmp_path: Path) -> None:
    """A run already published in another clone (``invoke republish`` leaves it in that clone's
    ``results/published/``), published here: every file its seal lists comes along, its gzipped tables included
    (seen dropped: they look like a run's per-packet ``*.csv.gz``), under a seal that still holds; a tampered one
    is refused, and so is publishing it onto itself."""
    import pandas as pd

    from chimera.experiments.kinds.stability.tables import CONTROL
    from chimera.report.publish import GZIP_FROM_BYTES, seal_of
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    run = _run(tmp_path, head)
    rows = max(1, GZIP_FROM_BYTES // 40)
    pd.DataFrame({k: range(rows) for k in CONTROL.keys} | {"note": ["x" * 30] * rows}).to_csv(
        run / CONTROL.name, index=False)
    there = publish(run, tmp_path / "clone" / "published")
    here = publish(there, tmp_path / "published")
    assert seal_of(here).files == seal_of(there).files and f"{CONTROL.name}.gz" in seal_of(here).files
    assert not (here / "packets.csv.gz").exists()
    with pytest.raises(ResultsError, match="already published"):
        publish(here, tmp_path / "published")
    (there / "ablation.csv").write_text("variant,macro_f1\nChimera,0.9999\n")
    with pytest.raises(ResultsError, match="differ from what was published"):
        publish(there, tmp_path / "again")
