"""A new experiment kind and a new target are one folder each plus one registry line: the toys in tests/toys/,
dropped into a copy of the checkout, run through the ordinary entry points (the command line: build, topo,
run-experiment, report, compare, sweep planning; the nightly suite, the mutation run, the conformance tests), with
no edit anywhere else. The toy target's switch is a Mininet node, so this file brings up testbeds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from builders import ROOT

#: Its own group, not the testbed group (conftest): most of its minute or two is spent outside any testbed (copying
#: the checkout, importing it, training, the nightly's bookkeeping), which on the testbed group's one worker held up
#: every testbed test behind it; its testbeds take the machine-wide lock like any other run's.
pytestmark = [pytest.mark.root, pytest.mark.long]


# --------------------------------------------------------------------------- a testbed target and a kind, each a folder

TOYS = ROOT / "tests" / "toys"
#: what each toy needs beyond its own folder: one registry line (the line, and the line it goes before)
REGISTRY_LINES = {
    "chimera/targets/registry.py": ('    "toy": "chimera.targets.toy:ToyTarget",\n', "}\nAUTO = "),
    "chimera/experiments/kinds/__init__.py": ('    "toy",\n', ")\n\n\ndef _record"),
}


#: the toy test's command-line steps, run in one interpreter of the copied checkout; each says what it found on a
#: line "STEP-<name> <value>"
CLI_STEPS = """
import json
from pathlib import Path
from invoke import Program
from tasks import ns

def invoke(*argv):
    try:
        Program(namespace=ns, binary="invoke").run(["invoke", *argv])
    except SystemExit as e:
        if e.code:
            raise

invoke("build", "--target", "toy", "--experiment", "chimera/experiments/kinds/toy/toy.yaml")
invoke("topo", "--target", "toy", "--experiment", "chimera/experiments/kinds/toy/toy.yaml")   # the Mininet CLI reads end-of-file (stdin is /dev/null): the topology goes
print(flush=True)                   # (its prompt ends no line)
invoke("run-experiment", "--name", "chimera/experiments/kinds/toy/toy.yaml", "--target", "toy", "--results", "{results}")
(out,) = (Path("{results}") / "toy-counts").iterdir()
print("STEP-first-report", json.dumps((out / "report.md").read_text()), flush=True)
(out / "report.md").unlink()
invoke("report", str(out))
invoke("compare", str(out), str(out))
from chimera.sweep.plan import plan
print("STEP-plan", [t.name for t in plan("chimera/experiments/kinds/toy/toy.yaml", [1, 2], None, "toy")], flush=True)
from chimera.experiments.load import load_experiment
try:
    load_experiment("quickstart", {{"toy": {{"top": 1}}}})
    print("STEP-foreign-section accepted", flush=True)
except Exception as e:
    print("STEP-foreign-section refused", " ".join(str(e).split()), flush=True)

# the nightly suite (its exit is judged from its manifest), then the conformance tests, in this interpreter too
try:
    Program(namespace=ns, binary="invoke").run(["invoke", "nightly", "--suite", "{suite}", "--history", "{history}",
                                                "--results", "{night}"])
except SystemExit as e:
    print("STEP-nightly-exit", e.code, flush=True)
import pytest
print("STEP-conformance-begin", flush=True)
# the toy's cases come from the registry like every target's, one per clock it declares: the quickstart on each
# clock and the stress pcap (collisions, malformed frames) on the trace clock. Each further case is a bring-up of
# the toy (a test fixture, not a product), and the full set held the machine's testbed lock for a minute of the
# suite's five, with every testbed test waiting
code = pytest.main(["-q", "-rA", "-p", "no:cacheprovider", "tests/test_conformance.py",
                    "-k", "toy and (quickstart or stress_collisions and trace)"])
print("STEP-conformance", int(code), flush=True)
"""


def _copy_of_the_checkout(dest: Path) -> None:
    """The tracked and untracked-but-not-ignored files of this checkout (its published results left out), as a
    git repository of its own: `git status` there lists what the toys changed."""
    import shutil
    import subprocess
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in files:
        if not f or f.startswith("results/published/") or not (ROOT / f).is_file():
            continue
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    _copy_built_caches(dest)


def _copy_built_caches(dest: Path) -> None:
    """What the checkout builds once, copied into the copy's ignored folders: the reference's numba kernels
    (compiled here once; numba keys its cache on the source's content, not its path, so each of the copy's
    processes, the command line, the nightly and its workers, the conformance run, loads them instead of compiling
    them again) and the fuzz profiles' artifacts (trained here once, or by another test, and read by the nightly's
    mutant worker from build/fuzz/artifacts, keyed by what they are built from)."""
    import shutil
    from chimera.fuzz.profiles import CACHE, PROFILES, artifact
    from chimera.reference.pipeline import run_reference
    from test_reference import random_artifact, random_packets
    run_reference(random_artifact(1), random_packets(1, 20)[0])
    for name in PROFILES:
        artifact(name)
    shutil.copytree(CACHE, dest / CACHE.relative_to(ROOT), dirs_exist_ok=True)
    for f in (ROOT / "chimera").rglob("__pycache__/*.nb[ic]"):
        to = dest / f.relative_to(ROOT)
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, to)


def test_a_toy_testbed_target_and_kind_need_their_own_folder_and_one_line_each(tmp_path: Path) -> None:
    """Goal 1 of the one-folder issue, proven on a copy of the checkout: a toy testbed target (a Mininet switch
    node whose dataplane is a userspace process running the toy program) and a toy kind, each dropped in as one folder with one registry
    line, run through the command line, the nightly suite (an experiment on the toy testbed, the toy kind, and the
    mutation step on the toy's program) and the conformance tests; `git status` then lists exactly their files."""
    import shutil
    import subprocess
    import sys

    from chimera.testbed.tools import testbed_unavailable_reason
    if (why := testbed_unavailable_reason()) is not None:
        pytest.skip(f"the toy's switch is a Mininet node, and the testbed cannot run here: {why}")
    repo = tmp_path / "repo"
    _copy_of_the_checkout(repo)
    shutil.copytree(TOYS / "target", repo / "chimera" / "targets" / "toy")
    shutil.copytree(TOYS / "kind", repo / "chimera" / "experiments" / "kinds" / "toy")
    for f, (line, before) in REGISTRY_LINES.items():
        text = (repo / f).read_text()
        assert text.count(before) == 1, f"{f}: where the registry line goes is not unique"
        (repo / f).write_text(text.replace(before, line + before))

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=repo, capture_output=True, text=True, check=True).stdout

    # the files the toys need: their two folders, and one added line in each registry
    assert sorted(git("status", "--porcelain", "--untracked-files=all").splitlines()) == sorted(
        [f"?? chimera/experiments/kinds/toy/{p.name}" for p in (TOYS / "kind").iterdir() if p.is_file()] +
        [f"?? chimera/targets/toy/{p.name}" for p in (TOYS / "target").iterdir() if p.is_file()] +
        [f" M {f}" for f in REGISTRY_LINES])
    assert sorted(git("diff", "--numstat").splitlines()) == sorted(f"1\t0\t{f}" for f in REGISTRY_LINES)

    # the nightly suite: the quickstart's variants on the toy testbed, the toy kind, and the toy's mutants
    small = {"synthetic": {"profile": "ciciot", "flows": 120, "duration_s": 10, "max_packets_per_flow": 12,
                           "attacks": ["SCAN"], "attack_share": 0.1}}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "require": ["reference", "toy"],
        "experiments": [{"name": "quickstart", "targets": ["reference", "toy"]},
                        {"name": "chimera/experiments/kinds/toy/toy.yaml", "targets": ["toy"]}],
        "overrides": {"quickstart": {"dataset": small}},
        "mutate": {"files": ["toy"], "per_file": 1, "fuzz_rounds": 1}, "seed": 1}))

    # the command line, in one interpreter (an import of the project costs seconds; each step goes through
    # invoke's own parser, as `invoke ...` does): the toy kind on the toy testbed; its report deleted and re-rendered
    # by the kind's own renderer; the run compared with itself, matched on its keys; the sweep plans the toy's
    # tasks; the toy section is the toy kind's alone; then the nightly suite and the conformance tests
    cli = tmp_path / "cli"
    script = CLI_STEPS.format(results=str(cli), suite=str(suite), history=str(tmp_path / "history.csv"),
                              night=str(tmp_path / "night"))
    steps = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=1200,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, stdin=subprocess.DEVNULL)
    assert steps.returncode == 0, f"the command-line steps failed:\n{steps.stdout[-3000:]}\n{steps.stderr[-3000:]}"
    said = dict(line.split(" ", 1) for line in steps.stdout.splitlines() if line.startswith("STEP-") and " " in line)
    (out,) = (cli / "toy-counts").iterdir()
    m = json.loads((out / "manifest.json").read_text())
    assert (m["kind"], m["target"], m["sections"]["toy"]["classes_seen"]) == ("toy", "toy", 2)
    counts = pd.read_csv(out / "toy_counts.csv")
    assert len(counts) == 2 and (counts[["lost", "reference_mismatches", "register_mismatches"]] == 0).all().all()
    assert "# toy" in json.loads(said["STEP-first-report"])
    assert "classes seen: 2" in (out / "report.md").read_text()
    assert "toy_counts.csv" in steps.stdout  # compare's table, matched on its keys
    assert said["STEP-plan"] == "['seed1-all', 'seed2-all']", steps.stderr[-2000:]
    # invoke build names the toy's program; invoke topo brought h1 - s1 - h2 up with the toy switch loaded, and down
    assert "toy program: " in steps.stderr and "program.py" in steps.stderr, steps.stderr[-2000:]
    assert "toy pipeline loaded" in steps.stderr, steps.stderr[-2000:]
    assert said["STEP-foreign-section"].startswith("refused") and "Extra inputs" in said["STEP-foreign-section"]

    (nd,) = (tmp_path / "night" / "nightly").glob("*-local")
    measured = json.loads((nd / "manifest.json").read_text())["sections"]["measured"]
    q, ref = measured["experiments"]["quickstart@toy"], measured["experiments"]["quickstart@reference"]
    assert q["f1"] == ref["f1"] and set(q["lost"].values()) == {0} and set(q["reference_mismatches"].values()) == {0}
    assert measured["experiments"]["toy@toy"]["f1"], steps.stdout[-2000:]
    score = measured["mutate"]["scores"]["toy"]
    assert score["killed"] + score["timeout"] + score["survived"] + score["invalid"] >= 1, measured["mutate"]
    (mt,) = (nd / "runs" / "mutate").glob("*/mutants.csv")
    assert set(pd.read_csv(mt)["file"]) == {"toy"}

    # conformance: the toy's cases come from the registry, like every target's
    conf = steps.stdout.split("STEP-conformance-begin", 1)[1]
    assert said["STEP-conformance"] == "0" and " passed" in conf and "failed" not in conf, conf[-2000:]
    assert {f"PASSED tests/test_conformance.py::{c}" for c in (
        "test_conformance_quickstart[toy-trace]", "test_conformance_quickstart[toy-switch]",
        "test_conformance_stress_collisions_and_malformed[toy-trace]")} <= set(conf.splitlines()), conf[-2000:]
