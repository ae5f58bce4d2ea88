"""A run's code fingerprint follows what the run imports: a fix stales only the runs it touches.

Each test edits a copy of the repository (its code, P4 programs, rules and experiment files, committed in a
git repository of its own), with published runs made at that commit, and reads their freshness as the book does.
Seen failing with the global fingerprint this replaced: an edit to one kind's run.py staled every run, a comment
in chimera.p4 staled every run, and an edit to a bench's data profile staled none.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from chimera.book.scope import run_set, scope_of
from chimera.formats.rundir import Manifest
from chimera.nightly import checks as ck
from chimera.nightly.golden import Golden, code_changes
from chimera.report.provenance import EVERYTHING, ROOT, Scope, TreeCode, closure, strip_c_comments
from chimera.report.sections import NightMeasured

ROOT = Path(__file__).resolve().parents[1]

#: (experiment, kind, target): published runs at the copy's commit
RUNS = (("roc", "roc", "reference"), ("accuracy", "accuracy", "reference"), ("ablation", "variants", "ebpf"),
        ("quickstart", "variants", "bmv2"), ("quickstart", "variants", "reference"), ("bench-scale", None, "local"))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed copy of the code, with one published run per RUNS entry made at its commit."""
    r = tmp_path / "repo"
    for top in ("chimera", "p4", "rules", "experiments"):
        shutil.copytree(ROOT / top, r / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.o"))
    _git(r, "init", "-q")
    _git(r, "add", "-A")
    _git(r, "commit", "-q", "-m", "copy")
    head = _git(r, "rev-parse", "HEAD")
    for i, (exp, kind, target) in enumerate(RUNS):
        d = r / "published" / exp / f"20200101-00000{i}-{target}"
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({
            "experiment": exp, "run_id": d.name, "target": target, "status": "complete", "kind": kind,
            "git": {"commit": head, "dirty": False}}))
    return r


def _fresh(r: Path) -> dict[str, bool]:
    return {f"{run.experiment}@{run.target}": run.freshness.fresh for run in run_set(r / "published", r)}


def _bump(path: Path, pattern: str, new: Callable[[re.Match[str]], str]) -> None:
    """Replace the first match of ``pattern`` in ``path`` by ``new(match)``: a real change to a number."""
    text = path.read_text()
    m = re.search(pattern, text)
    assert m is not None, f"{path.name} has nothing matching {pattern}"
    path.write_text(text.replace(m.group(0), new(m), 1))


def test_everything_is_fresh_at_its_own_commit(repo: Path) -> None:
    assert all(_fresh(repo).values()), _fresh(repo)


def test_a_fix_to_one_kind_stales_only_that_kinds_runs(repo: Path) -> None:
    run_py = repo / "chimera/experiments/kinds/roc/run.py"
    run_py.write_text(run_py.read_text() + "\nEXTRA_LINE_THAT_RUNS = 1\n")
    fresh = _fresh(repo)
    assert not fresh["roc@reference"], fresh
    assert all(v for k, v in fresh.items() if k != "roc@reference"), fresh
    stale = next(r for r in run_set(repo / "published", repo) if r.experiment == "roc").freshness
    assert stale.since == () and "uncommitted" in stale.mark()   # not committed yet: no commit to name
    _git(repo, "commit", "-qam", "roc fix")
    stale = next(r for r in run_set(repo / "published", repo) if r.experiment == "roc").freshness
    assert len(stale.since) == 1 and "its code changed first in" in stale.mark()
    run_py.write_text(run_py.read_text() + "\nANOTHER_LINE_THAT_RUNS = 2\n")
    _git(repo, "commit", "-qam", "another roc fix")
    again = next(r for r in run_set(repo / "published", repo) if r.experiment == "roc").freshness
    assert len(again.since) == 2 and again.mark() == stale.mark()   # a page citing it does not move again


def test_the_commit_named_as_staling_a_run_changed_its_code(repo: Path) -> None:
    """A commit that only reworded comments in a run's code is not the one a stale mark names: the first commit
    that changed the code is (the book named a comments-only commit for 30 runs; seen failing with every commit
    that touched the files counted)."""
    run_py = repo / "chimera/experiments/kinds/roc/run.py"
    run_py.write_text("# a comment a reader added\n" + run_py.read_text())
    _git(repo, "commit", "-qam", "roc comment")
    assert _fresh(repo)["roc@reference"]
    run_py.write_text(run_py.read_text() + "\nEXTRA_LINE_THAT_RUNS = 1\n")
    _git(repo, "commit", "-qam", "roc fix")
    fix = _git(repo, "rev-parse", "--short=7", "HEAD")
    stale = next(r for r in run_set(repo / "published", repo) if r.experiment == "roc").freshness
    assert stale.since == (fix,), stale.since
    # a module written first and imported by the run's code later: the commit that imports it is named
    (repo / "chimera/formats/newmod.py").write_text("VALUE = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a new module nobody imports")
    kind = repo / "chimera/experiments/kinds/variants/__init__.py"
    kind.write_text(kind.read_text() + "\nfrom chimera.formats import newmod  # noqa: E402,F401\n")
    _git(repo, "commit", "-qam", "the variants kind imports it")
    imports = _git(repo, "rev-parse", "--short=7", "HEAD")
    quick = next(r for r in run_set(repo / "published", repo) if r.experiment == "quickstart").freshness
    assert quick.since[:1] == (imports,), quick.since


def test_a_comment_in_the_dataplane_sources_stales_nothing(repo: Path) -> None:
    p4 = repo / "p4/chimera.p4"
    lines = p4.read_text().splitlines()
    code = [i for i, line in enumerate(lines) if i > lines.index(" */") and line.strip().endswith(";")
            and not line.lstrip().startswith(("*", "/"))][:3]
    assert len(code) == 3
    for i in code:
        lines[i] = "  " + lines[i] + "   /* noted */ // again"
    p4.write_text("// a comment a reader added\n" + "\n".join(lines) + "\n")
    bpf = repo / "chimera/targets/ebpf/chimera.bpf.c"
    bpf.write_text("/* a block\n   comment */\n" + bpf.read_text() + "\n// trailing comment\n")
    assert all(_fresh(repo).values()), _fresh(repo)


def test_a_real_change_in_the_p4_program_stales_only_the_runs_that_read_it(repo: Path) -> None:
    """The BMv2 runs, and a kind that measures what chimera.p4 allocates (targets/allocation.py); not an eBPF or
    a reference run of the ablation layout, nor a comparison on the reference (its per-flow bits are the
    design's count), nor the scale bench."""
    _bump(repo / "p4/chimera.p4", r"#define (MAX_\w+) (\d+)", lambda m: f"#define {m.group(1)} {int(m.group(2)) * 2}")
    fresh = _fresh(repo)
    stale = {k for k, v in fresh.items() if not v}
    assert "quickstart@bmv2" in stale and not stale & {"ablation@ebpf", "quickstart@reference", "bench-scale@local",
                                                         "accuracy@reference"}
    tree = TreeCode(repo)
    for run in run_set(repo / "published", repo):
        if f"{run.experiment}@{run.target}" in stale - {"quickstart@bmv2"}:
            assert "chimera/targets/allocation.py" in tree.closure(run.scope), run.experiment


def test_a_change_to_the_live_control_loop_stales_the_switch_runs_not_the_comparisons(repo: Path) -> None:
    """The slow loop and its live driver run beside a switch (and in the stability kinds' simulation), not in a
    comparison on the reference pipeline: a change to them stales the eBPF ablation, not Table 1's accuracy run
    nor the ROC. Seen failing while the registry imported the testbed target (and with it the live loop) and
    Table 1's per-flow bits were read from the eBPF object (which imports the eBPF target and its testbed)."""
    loop = repo / "chimera/controlplane/loop.py"
    loop.write_text(loop.read_text() + "\nEXTRA_LINE_THAT_RUNS = 1\n")
    fresh = _fresh(repo)
    assert not fresh["ablation@ebpf"] and fresh["accuracy@reference"] and fresh["roc@reference"], fresh
    tree = TreeCode(repo)
    acc = tree.closure(scope_of(Manifest(experiment="accuracy", run_id="x", target="reference", kind="accuracy")))
    assert not any(r.startswith(("chimera/targets/ebpf/", "chimera/targets/bmv2/", "p4/")) for r in acc)
    assert not {"chimera/controlplane/live.py", "chimera/targets/testbed.py"} & acc


def test_a_new_target_or_kind_stales_no_run_but_a_change_to_the_registry_does(repo: Path) -> None:
    """Adding a resident is one line in its registry's table (RESIDENT_TABLES): no other run's code. Any other
    change to the registry is every run's code. Seen failing before the tables were left out: one registry line
    staled every published run."""
    reg = repo / "chimera/targets/registry.py"
    _bump(reg, r'("reference": "chimera\.targets\.reference:ReferenceTarget",)',
          lambda m: m.group(1) + '\n    "tofino": "chimera.targets.tofino:TofinoTarget",')
    kinds = repo / "chimera/experiments/kinds/__init__.py"
    _bump(kinds, r'(PACKAGES = \(\n)', lambda m: m.group(1) + '    "new_kind",\n')
    assert all(_fresh(repo).values()), _fresh(repo)
    reg.write_text(reg.read_text() + "\nEXTRA_LINE_THAT_RUNS = 1\n")
    fresh = _fresh(repo)
    assert not any(v for k, v in fresh.items() if not k.startswith("bench-")), fresh


def test_a_change_to_a_benchs_data_profile_stales_that_bench(repo: Path) -> None:
    _bump(repo / "chimera/bench/scale.py", r"(flows|packets|seed)\s*=\s*(\d+)",
          lambda m: f"{m.group(1)}={int(m.group(2)) + 1}")
    fresh = _fresh(repo)
    assert not fresh["bench-scale@local"], fresh
    assert all(v for k, v in fresh.items() if k != "bench-scale@local"), fresh


def test_the_code_of_a_run_is_what_it_imports() -> None:
    """An eBPF run reaches its C program and not the BMv2 target; a BMv2 run reaches the P4 program; a
    renderer is never part of a run's code; everything is every candidate less presentation."""
    tree = TreeCode(ROOT)
    m = Manifest(experiment="ablation", run_id="x", target="ebpf", kind="variants")
    ebpf = tree.closure(scope_of(m))
    assert "chimera/targets/ebpf/chimera.bpf.c" in ebpf and "experiments/ablation.yaml" in ebpf
    assert not any(r.startswith("chimera/targets/bmv2/") or r.startswith("p4/") for r in ebpf)
    assert not any(r.endswith("/render.py") for r in ebpf)
    bmv2 = tree.closure(scope_of(m.model_copy(update={"target": "bmv2"})))
    assert "p4/chimera.p4" in bmv2 and "chimera/targets/ebpf/chimera.bpf.c" not in bmv2
    assert not any(r.startswith("chimera/experiments/kinds/roc/") for r in ebpf | bmv2)
    assert tree.closure(EVERYTHING) >= ebpf | bmv2
    # a record of the whole suite (fresh-check, bench-suite) also depends on the tests, the scripts and the pins
    whole = tree.closure(EVERYTHING)
    assert {"pyproject.toml", "tests/test_provenance.py", "scripts/bootstrap"} <= whole
    assert not any(r.startswith(("tests/", "scripts/")) or r == "pyproject.toml" for r in ebpf | bmv2)
    assert closure(Scope(("chimera.no.such.module",)), tree.files) == frozenset()


def test_c_comments_are_stripped_but_strings_kept() -> None:
    src = 'int a = 1; // x\n/* y\n z */ char *s = "// not a comment /* */";\n\n  int   b;\n'
    assert strip_c_comments(src) == 'int a = 1;\nchar *s = "// not a comment /* */";\nint b;'


def test_a_golden_and_a_night_from_one_commit_judge_every_exact_check(repo: Path) -> None:
    """The golden keeps its commit, not a hash of its own: each run's code is compared at that commit with the
    run's own fingerprint, so a night from the golden's commit judges every bit-identical check; a fix to one
    kind suspends only that kind's."""
    head = _git(repo, "rev-parse", "HEAD")
    scopes = {f"{e}@{t}": scope_of(Manifest(experiment=e, run_id="x", target=t, kind=k))
              for e, k, t in RUNS if k is not None}
    f1 = {k: {"full": 0.9} for k in scopes}
    golden = Golden.model_validate({"git": head, "experiments": {k: {"f1": v} for k, v in f1.items()}})
    night = NightMeasured.model_validate({"experiments": {k: {"f1": v, "clock": "trace", "reference_mismatches":
                                                              {"full": 0}, "register_mismatches": {"full": 0},
                                                              "lost": {"full": 0}} for k, v in f1.items()}})

    def exact(changes: dict[str, str | None]) -> dict[str, str]:
        return {c.name.split("/")[0]: c.status for c in
                ck.experiment_checks(night, golden, lambda k: changes.get(k, "none")) if "bit-identical" in c.name}
    same = code_changes(golden, scopes, TreeCode(repo))
    assert all(v is None for v in same.values()), same
    assert set(exact(same).values()) == {"pass"} and len(exact(same)) == len(scopes)
    run_py = repo / "chimera/experiments/kinds/accuracy/run.py"
    run_py.write_text(run_py.read_text() + "\nEXTRA_LINE_THAT_RUNS = 1\n")
    moved = code_changes(golden, scopes, TreeCode(repo))
    assert [k for k, v in moved.items() if v is not None] == ["accuracy@reference"], moved
    assert "kinds/accuracy/run.py" in str(moved["accuracy@reference"])
    assert exact(moved)["accuracy@reference"] == "no-verdict"
    assert {v for k, v in exact(moved).items() if k != "accuracy@reference"} == {"pass"}
    # a golden taken in another clone: its codes recorded, its commit not in this history (a shallow clone, a
    # copy): the moved run is still named, without its files, and the night goes on (it once stopped on git's
    # "not a tree object")
    elsewhere = golden.model_copy(update={"git": "0" * 40, "codes": {k: TreeCode(repo).fingerprint(sc)
                                                                     for k, sc in scopes.items()}})
    run_py.write_text(run_py.read_text() + "\nANOTHER_LINE_THAT_RUNS = 2\n")
    far = code_changes(elsewhere, scopes, TreeCode(repo))
    assert [k for k, v in far.items() if v is not None] == ["accuracy@reference"], far
    assert "not in this clone" in str(far["accuracy@reference"])


def test_a_sweep_depends_on_its_experiment_not_on_everything() -> None:
    """A sweep of one experiment starts at the runner, the sweep driver, that experiment's kind and YAML and its
    target: a fix elsewhere does not stale it (it once fell through to 'everything')."""
    from chimera.book.scope import RUNNER, SWEEP, kind_packages, scope_of
    from chimera.formats.rundir import Manifest
    from chimera.sweep.driver import SweepRecord
    m = Manifest(experiment="sweep-accuracy", run_id="20260101-000000-reference", target="reference", kind="sweep")
    m.put("sweep", SweepRecord(experiment="accuracy", seeds=[11, 12], target="reference", executor="sequential"))
    s = scope_of(m)
    assert not s.everything
    assert {RUNNER, SWEEP, kind_packages()["accuracy"], "chimera.targets.reference"} <= set(s.modules)
    assert s.files == ("experiments/accuracy.yaml",)
    # an experiment whose YAML names no kind has the loader's default kind (the ablation: variants), not everything
    m = Manifest(experiment="sweep-ablation", run_id="20260101-000000-reference", target="reference", kind="sweep")
    m.put("sweep", SweepRecord(experiment="ablation", seeds=[11, 12], target="reference", executor="sequential"))
    s = scope_of(m)
    assert not s.everything and kind_packages()["variants"] in s.modules, s


def test_short_hashes_are_seven_digits_whatever_the_clone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page cites commits by seven hex digits. git's %h grows with the clone's object count, so CI's clone
    rendered eight where this one rendered seven and the book test failed there; core.abbrev=12 stands in for
    a larger clone."""
    from chimera.book import claims as C
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.abbrev")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "12")
    C.rule_dates.cache_clear()
    try:
        dates = C.rule_dates()
    finally:
        C.rule_dates.cache_clear()
    assert dates and all(len(commit) == 7 for _, commit, _ in dates if commit != "uncommitted")
    first = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()[0]
    commits = TreeCode(ROOT).code_commits(first)
    assert commits and all(len(c) == 7 for c in commits)
