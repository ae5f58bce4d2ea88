"""The README and docs are the book's rendering of the published runs: re-render them and fail on any difference.

Every measured number of README.md and docs/*.md lives in a block (`<!-- book:NAME -->`) that
``chimera.book`` renders from ``results/published/``; prose outside the blocks names no measured number and
cites no run. So an edited cell, a misattributed value, a truncated decimal, a flipped sign or a changed
count fails here, and so does a run that went stale (its rendering gains the stale mark).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from chimera.book.render import BLOCK, check, check_text, typed_numbers
from chimera.book.scope import published_book, run_set
from chimera.report.book import Book
from chimera.report.provenance import code_fingerprint, fingerprint_at

ROOT = Path(__file__).resolve().parents[1]
CITE = re.compile(r"results/published/[\w.-]+/\d{8}-\d{6}-[\w.-]*\w")


@pytest.fixture(scope="module")
def book() -> Book:
    return published_book(ROOT)


@pytest.fixture(scope="module")
def readme() -> str:
    return (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def results_page() -> str:
    """docs/results.md: the findings the README links to (its blocks are the ones a hand most often edits)."""
    return (ROOT / "docs" / "results.md").read_text()


def _block(text: str, name: str) -> str:
    m = next(m for m in BLOCK.finditer(text) if m.group("name") == name)
    return m.group("body")


def _edit(text: str, name: str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new`` once, inside block ``name`` only."""
    body = _block(text, name)
    assert old in body, f"{old!r} is not in block {name}"
    return text.replace(body, body.replace(old, new, 1), 1)


def test_a_reviewer_reads_the_readme_in_one_screen(readme: str) -> None:
    """At most 250 lines; the set-up, the card's command and the claims tally within the first 80 (the rest of
    what the README once held lives in docs/results.md, docs/reproducibility.md and docs/guide.md)."""
    lines = readme.splitlines()
    assert len(lines) <= 250, len(lines)
    head = "\n".join(lines[:80])
    for must in ("scripts/bootstrap && .venv/bin/invoke test", "invoke run-experiment --name ablation",
                 "<!-- book:claims-tally -->"):
        assert must in head, must


def test_cited_runs_are_published() -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        missing = sorted({c for c in CITE.findall(page.read_text()) if not (ROOT / c / "manifest.json").is_file()})
        assert not missing, f"{page.name} cites runs that are not published: {missing} (invoke publish RUN_DIR)"


def test_readme_and_docs_are_as_their_runs_render_them(book: Book) -> None:
    bad = check(ROOT, book)
    assert not bad, "run `invoke book` (then review and commit the pages):\n" + "\n".join(map(str, bad))


def test_no_run_is_cited_outside_a_block(readme: str) -> None:
    """A citation outside a block would escape the stale mark."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        outside = BLOCK.sub("", page.read_text())
        assert not CITE.findall(outside), f"{page.name} cites runs outside a book block: {CITE.findall(outside)}"


def test_the_five_edits_each_fail(book: Book, results_page: str) -> None:
    """The edits a reader's copy-paste or a stale hand could make: each one is caught."""
    fid = _block(results_page, "fidelity")
    cell = re.search(r"^(\| [^|]+ \| [^|]+ \| )(\d\.\d{3}) ±", fid, re.M)  # the first row's Chimera mean
    assert cell
    acc = _block(results_page, "accuracy")
    mlp = re.search(r"^\| MLP-B † \| (\d\.\d{4}) \|", acc, re.M)
    cnn = re.search(r"^\| CNN-L † \| (\d\.\d{4}) \|", acc, re.M)
    assert mlp and cnn and mlp.group(1) != cnn.group(1)
    abl = re.search(r"Chimera (\d\.\d{4});", _block(results_page, "ablation"))
    assert abl
    sign = re.search(r"Chimera − Fast-Only: ([+-])(\d\.\d{4})", _block(results_page, "stability"))
    assert sign
    count = re.search(r"(\d{1,3}(?:,\d{3})+) packets", _block(results_page, "stability"))
    assert count
    flipped = ("-" if sign.group(1) == "+" else "+") + sign.group(2)
    edits = {
        "a table cell": _edit(results_page, "fidelity", cell.group(0), f"{cell.group(1)}{float(cell.group(2)) + 0.03:.3f} ±"),
        "a misattributed value": _edit(results_page, "accuracy", mlp.group(0), f"| MLP-B † | {cnn.group(1)} |"),
        "a truncated number": _edit(results_page, "ablation", f"Chimera {abl.group(1)};", f"Chimera {abl.group(1)[:4]};"),
        "a flipped sign": _edit(results_page, "stability", sign.group(0), f"Chimera − Fast-Only: {flipped}"),
        "an integer": _edit(results_page, "stability", count.group(0),
                            f"{int(count.group(1).replace(',', '')) + 1:,} packets"),
    }
    assert not check_text(results_page, book, "docs/results.md"), "the committed page must pass before it is edited"
    for what, text in edits.items():
        assert text != results_page, what
        assert check_text(text, book, "docs/results.md"), f"{what} passed the README check"


def test_a_number_typed_outside_the_blocks_is_caught() -> None:
    assert typed_numbers("Chimera scored 0.9429 (`code 0.1234`).\n<!-- book:x -->\n0.5555\n<!-- /book:x -->\n") \
        == ["0.9429"]
    assert typed_numbers("It took 1,887.7 frames/s.") == ["1,887.7", "1,887.7 frames/s"]


def test_a_measured_figure_typed_outside_the_blocks_is_caught() -> None:
    """Percentages, "N times", rates and times typed by hand are caught as the long decimals are; a confidence
    level, a power of two and configured values written as code are not (seen failing with the 4-decimal rule
    alone, which let "about 35 times slower" and "~70%" through)."""
    text = ("It ran about 35 times slower; ~70% of it went to GMP; x11.6 over the host; 1,887.7 frames/s; "
            "it took 12 min and 5.5 s.\n")
    assert typed_numbers(text) == ["1,887.7", "35 times", "~70", "x11.6", "1,887.7 frames/s", "12 min", "5.5 s"]
    assert typed_numbers("a 95% interval at 2^23 ns on x86-64, `--max-replay 30m`, `10%`\n") == []


def test_an_edited_published_table_is_refused(tmp_path: Path) -> None:
    """Each published run's manifest seals its tables: a CSV edited after publishing fails every rendering of the
    book (so `invoke book --check` and this test file), naming the file (seen failing with the seal unchecked)."""
    import shutil

    from chimera.errors import ResultsError
    src = run_set().need("hyper_dim").path
    run = tmp_path / "hyper_dim" / src.name
    shutil.copytree(src, run)
    assert run_set(tmp_path, ROOT).need("hyper_dim")     # as published: read
    csv = run / "hyper_dim.csv"
    csv.write_text(csv.read_text().replace("0.9", "0.8", 1))
    with pytest.raises(ResultsError, match="hyper_dim.csv differ from what was published"):
        run_set(tmp_path, ROOT)


def test_freshness_is_judged_by_the_code_fingerprint(tmp_path: Path) -> None:
    """A run made at the first commit is stale, with the commits named; one at HEAD is as fresh as the tree."""
    first = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()[-1]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    for rid, commit in (("20200101-000000-reference", first), ("20200101-000001-reference", head)):
        d = tmp_path / "quickstart" / rid
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"experiment": "quickstart", "run_id": rid, "target": "reference",
                                                     "status": "complete", "git": {"commit": commit, "dirty": False}}))
    runs = run_set(tmp_path, ROOT)
    old, new = runs.all("quickstart")
    assert not old.freshness.fresh and "stale: made at" in old.cite() and old.freshness.since
    assert new.freshness.fresh == (fingerprint_at(head, ROOT, new.scope) == code_fingerprint(ROOT, new.scope))
    assert ("stale" in new.cite()) != new.freshness.fresh


def test_a_report_renderer_is_not_result_code() -> None:
    """A kind's render.py draws its report from the run's tables: editing it leaves every published run fresh,
    while its run.py, config.py and tables.py (what the numbers are) count."""
    from chimera.report.provenance import counts
    assert not counts("chimera/experiments/kinds/stability/render.py")
    assert not counts("chimera/experiments/kinds/yardstick_render.py")
    assert not counts("chimera/experiments/render.py")
    for rel in ("chimera/experiments/kinds/stability/run.py", "chimera/experiments/kinds/stability/tables.py",
                "chimera/experiments/kinds/yardstick_common.py", "chimera/controlplane/prior.py",
                "chimera/compile/build.py", "experiments/stability24h.yaml", "p4/chimera.p4"):
        assert counts(rel), rel
    assert not counts("chimera/report/common.py") and not counts("chimera/book/blocks.py")
    # the book blocks of a kind and of the benches: presentation where they live, beside code that counts
    assert not counts("chimera/experiments/kinds/stability/blocks.py") and not counts("chimera/bench/blocks.py")
    assert counts("chimera/bench/scale.py")


def test_no_experiment_reaches_a_check_harness() -> None:
    """A harness is left out of ``EVERYTHING`` because no experiment can reach it: no kind's code, on any
    target, imports one (a bench that does counts it: its closure follows its imports)."""
    from chimera.book.scope import kind_packages, scope_of
    from chimera.formats.rundir import Manifest
    from chimera.report.provenance import HARNESS_FILES, TreeCode
    from chimera.targets.registry import TARGETS
    assert all((ROOT / h).is_file() for h in HARNESS_FILES), HARNESS_FILES
    tree = TreeCode(ROOT)
    reached = [f"{kind}@{target} reaches {h}" for kind in kind_packages() for target in TARGETS
               for h in HARNESS_FILES
               if h in tree.closure(scope_of(Manifest(experiment=kind, run_id="x", target=target, kind=kind)))]
    assert not reached, reached
    assert "chimera/targets/bmv2/files.py" in tree.closure(scope_of(Manifest(
        experiment="bench-bmv2files", run_id="x", target="local")))


def test_a_time_goal_is_read_from_the_median_of_three_records_of_one_code_on_one_host() -> None:
    """The README's set-up and suite times: one record is one draw of the host's speed; where three or more records
    were made from the newest one's commit on its host, their median is stated beside it (other code, another
    host or fewer records: nothing)."""
    from types import SimpleNamespace
    from typing import Any, cast

    from chimera.book.front import same_code_median

    def rec(commit: str, kernel: str, c1: float, c2: float, t2: float) -> Any:
        return SimpleNamespace(manifest=SimpleNamespace(
            environment={"kernel": kernel}, git=SimpleNamespace(commit=commit),
            timings_s={"command_1": c1, "command_2": c2, "tests_2": t2}))
    same = [rec("a", "k", 130, 310, 301), rec("a", "k", 120, 300, 290), rec("a", "k", 140, 305, 296)]
    other = [rec("b", "k", 1, 1, 1), rec("a", "k2", 1, 1, 1)]
    said = same_code_median(cast(Any, [*other, *same]), same[-1])
    assert said == (" The median of the 3 records of this code on this host: set-up 130 s, the test suite 296 s "
                    "(pytest's own time; its command 305 s).")
    assert same_code_median(cast(Any, [*other, *same[:2]]), same[-1]) == ""


def test_the_scale_goal_is_a_verdict_only_from_the_median_of_three_runs_of_one_code_on_one_host() -> None:
    """The scale bench's time goal: one run is one draw, so fewer than three runs of the same code fingerprint on
    the same kernel give no verdict, and three give the verdict of their median time (not of the newest draw)."""
    from types import SimpleNamespace
    from typing import Any, cast

    from chimera.bench.blocks import scale_goal
    from chimera.bench.scale import GOAL_S, ScaleResult

    def rec(fp: str, kernel: str, total: float, rid: str) -> Any:
        res = ScaleResult(stages=[], sizes=[10, 100], total_s=total, peak_rss_gib=1.0, goal_met=total <= GOAL_S,
                          projected_s=0.0, projected_gib=0.0, superlinear=[])
        return SimpleNamespace(manifest=SimpleNamespace(
            environment={"kernel": kernel}, code_fingerprint=fp, get=lambda key, cls: res),
            cite=lambda: rid, result=res)
    slow, fast = GOAL_S + 100, GOAL_S - 100
    same = [rec("f", "k", slow, "r1"), rec("f", "k", slow, "r2"), rec("f", "k", fast, "r3")]
    other = [rec("g", "k", fast, "o1"), rec("f", "k2", fast, "o2")]
    two = scale_goal(cast(Any, [*other, *same[1:]]), same[-1], same[-1].result)
    assert "no verdict yet, 2 of the 3 runs" in two and "met on this one run" in two
    three = scale_goal(cast(Any, [*other, *same]), same[-1], same[-1].result)
    assert ": not met, median" in three and "(r1, r2 and r3)" in three, three
