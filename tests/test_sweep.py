"""Sweeps on Ray: the plan, bit-identical merges, retries after a killed worker, failures kept apart, and one
testbed per node."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from chimera.errors import ConfigError
from chimera.sweep.driver import merge, run_sequential, sweep
from chimera.sweep.plan import plan
from chimera.sweep.task import KILL_ENV, PIDS_FILE

from builders import ROOT, holding_the_testbed_lock

TINY = {"name": "tiny-sweep", "kind": "hyper_dim", "seed": 1, "target": "reference",
        "datasets": {"ciciot": {"synthetic": {"profile": "ciciot", "flows": 150, "seed": 3, "duration_s": 20,
                                              "max_packets_per_flow": 40, "attacks": ["SCAN", "SYN_FLOOD"],
                                              "attack_share": 0.1}}},
        "rules": "rules/default.yaml", "model": {"centroids": 16, "window": 4, "epochs": 2},
        "sweep": {"features": [4, 8], "d_v": [4], "bits": [8], "per_flow_budget_bits": 1500}}


def _yaml(tmp: Path, cfg: dict, name: str = "tiny-sweep.yaml") -> str:
    p = tmp / name
    p.write_text(yaml.safe_dump(cfg))
    return str(p)


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Local Ray for the module; its workers see KILL_ENV (a worker's environment is the raylet's, fixed when Ray
    starts), so a test can make one task's first attempt crash by a file in that folder.

    They also see this process as the testbed lock's owner (LOCK_OWNER_ENV), so their testbeds nest in its hold,
    as a run's children do: a test whose tasks bring up testbeds holds the lock around them
    (holding_the_testbed_lock), and then only the sweep's own ``testbed`` resource keeps those tasks apart. (Before,
    the tasks took the lock on their own, between other workers' testbeds: in full runs that test took 47-67 s,
    against 11 s alone.)"""
    from chimera.sweep.driver import start_ray
    from chimera.testbed.topology import LOCK_OWNER_ENV
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KILL_ENV, str(tmp_path_factory.mktemp("kill")))
        mp.setenv(LOCK_OWNER_ENV, str(os.getpid()))
        mp.delenv("RAY_worker_niceness", raising=False)   # start_ray sets it for a local instance, not the suite
        ray = start_ray(None, 2)
        yield ray
        ray.shutdown()


def test_plan_expands_cells_seeds_and_datasets(tmp_path: Path) -> None:
    cfg = {**TINY, "datasets": {**TINY["datasets"], "peer": {"synthetic": {"profile": "peerrush", "flows": 100}}}}
    tasks = plan(_yaml(tmp_path, cfg), [1, 2, 3], None, "reference")
    assert len(tasks) == 2 * 1 * 1 * 2 * 3 and len({t.name for t in tasks}) == len(tasks)
    assert not any(t.testbed for t in tasks)
    assert all(t.overrides["seed"] == t.seed and len(t.overrides["datasets"]) == 1 for t in tasks)
    assert len(plan(_yaml(tmp_path, cfg), [1], ["peer"], "ebpf")) == 2
    assert all(t.testbed for t in plan(_yaml(tmp_path, cfg), [1], ["peer"], "ebpf"))
    with pytest.raises(ConfigError, match="neither one of"):
        plan(_yaml(tmp_path, cfg), [1], ["nope"], "reference")
    q = plan("quickstart", [1], None, "reference")
    assert [t.cell["variant"] for t in q] == ["Chimera", "Neural only"]


def test_ray_sweep_equals_the_sequential_tasks(ray_local, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    exp = _yaml(tmp_path, TINY)
    out = sweep(exp, [1, 2], target="reference", results_root=tmp_path / "results", data_root=ROOT / "data")
    seq = merge(run_sequential(plan(exp, [1, 2], None, "reference"), "reference", tmp_path / "seq", ROOT / "data"))
    got = pd.read_csv(out / "hyper_dim.csv")
    want = seq["hyper_dim.csv"]
    drop = ["seconds"]
    pd.testing.assert_frame_equal(got.drop(columns=drop), want.drop(columns=drop), check_exact=True)
    summary = pd.read_csv(out / "summary-hyper_dim.csv")
    assert {"f1_mean", "f1_ci95", "f1_count"} <= set(summary.columns) and (summary["f1_count"] == 2).all()
    man = json.loads((out / "manifest.json").read_text())["sections"]["sweep"]  # the sweep's own record
    assert len(man["tasks"]) == 4 and not man["failed_tasks"]
    assert all(t["node"] != "local" and t["pid"] != os.getpid() for t in man["tasks"])


def test_the_suites_ray_workers_run_at_its_priority(ray_local) -> None:  # type: ignore[no-untyped-def]
    """Ray's default would start them at nice 15, where beside busy processes a task got almost no CPU: a local
    instance (start_ray) runs its workers at the driver's priority (seen failing without it: an invoke sweep beside
    a test suite gave its two tasks a few minutes of CPU in half an hour)."""
    def nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, 0)
    assert ray_local.get(ray_local.remote(nice).remote()) == nice()


@pytest.mark.parametrize("retries", [1, 0])
def test_killed_worker_is_retried_or_recorded(retries: int, ray_local, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The worker of one task SIGKILLs itself on its first attempt (KILL_ENV): with a retry the task reruns in
    another process and the merge is complete; without, it is recorded as failed with its error and the other
    task is still merged. The kill is at a known point, not raced against the task."""
    exp = _yaml(tmp_path, TINY)
    victim = plan(exp, [1], None, "reference")[0].name
    trigger = Path(os.environ[KILL_ENV]) / victim
    trigger.touch()
    try:
        out = sweep(exp, [1], target="reference", retries=retries, results_root=tmp_path / "results",
                    data_root=ROOT / "data")
    finally:
        trigger.unlink()
    man = json.loads((out / "manifest.json").read_text())["sections"]["sweep"]  # the sweep's own record
    by = {t["task"]: t for t in man["tasks"]}
    pids = [json.loads(line)["pid"] for line in (out / "work" / victim / PIDS_FILE).read_text().splitlines()]
    rows = pd.read_csv(out / "hyper_dim.csv")
    if retries:
        assert all(t["status"] == "ok" for t in by.values())
        assert by[victim]["attempts"] == 2 and len(pids) == 2 and by[victim]["pid"] == pids[1] != pids[0]
        assert len(rows) == 2
    else:
        assert len(pids) == 1 and by[victim]["status"] == "failed" and by[victim]["error"]
        assert man["failed_tasks"] == [victim]
        assert len(rows) == 1 and victim not in set(rows["sweep_task"])
        assert "failed" in (out / "report.md").read_text()


def test_testbed_tasks_never_overlap_and_conform(ray_local, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Two eBPF variants through Ray on this node (one testbed resource): their runs never overlap in time, and
    each is 0 lost and 0 reference mismatches. The tasks nest in this test's hold on the testbed lock (ray_local),
    so the lock does not keep them apart: the resource must."""
    from chimera.targets.ebpf import EbpfTarget
    why = EbpfTarget.unavailable_reason()
    if why:
        pytest.skip(f"the eBPF testbed cannot run here: {why}")
    cfg = {"name": "tiny-testbed-sweep", "seed": 1, "target": "ebpf",
           "dataset": TINY["datasets"]["ciciot"], "rules": "rules/default.yaml", "model": TINY["model"],
           "variants": [{"name": "Chimera"}, {"name": "Neural only", "fusion": {"mode": "neural"}}]}
    with holding_the_testbed_lock():
        out = sweep(_yaml(tmp_path, cfg, "tb.yaml"), [1], target="ebpf", results_root=tmp_path / "results",
                    data_root=ROOT / "data")
    man = json.loads((out / "manifest.json").read_text())["sections"]["sweep"]  # the sweep's own record
    spans = sorted((t["started"], t["ended"]) for t in man["tasks"])
    assert len(spans) == 2 and spans[0][1] <= spans[1][0], f"testbed tasks overlapped: {spans}"
    ab = pd.read_csv(out / "ablation.csv")
    assert len(ab) == 2 and (ab["lost"] == 0).all() and (ab["reference_mismatches"] == 0).all()
    assert set(ab["executed_on"]) == {"ebpf"}


TWO_SETS = {"name": "tiny-accuracy", "kind": "accuracy", "seed": 1, "target": "reference",
            "datasets": {"ciciot": TINY["datasets"]["ciciot"],
                         "peer": {"synthetic": {"profile": "peerrush", "flows": 100, "seed": 2, "duration_s": 20,
                                                "max_packets_per_flow": 40}}},
            "rules": "rules/default.yaml", "model": TINY["model"],
            "baselines": {"methods": ["Leo", "Tree (yardstick)"], "tuning": "first"}}


def test_a_joined_one_seed_sweep_is_the_plain_run(tmp_path: Path) -> None:
    """Table 1's datasets as parallel tasks, joined: the tables a plain run writes, bit for bit, in the
    experiment's dataset order whatever order the tasks ran in, with every dataset in the manifest."""
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    from chimera.formats.rundir import Manifest
    from chimera.sweep.join import EXACT_FLOATS, join
    exp = _yaml(tmp_path, TWO_SETS, "tiny-accuracy.yaml")
    plain = run_experiment(load_experiment(exp), results_root=tmp_path / "plain", data_root=ROOT / "data",
                           experiment_file=exp)
    swept = sweep(exp, [1], ["peer", "ciciot"], results_root=tmp_path / "sweep", data_root=ROOT / "data",
                  executor="sequential")
    joined = join(swept, tmp_path / "joined")
    assert joined.parent == tmp_path / "joined" / "tiny-accuracy"
    a, b = (pd.read_csv(d / "accuracy.csv", **EXACT_FLOATS) for d in (plain, joined))
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"), check_exact=True)
    assert list(b["dataset"].unique()) == ["ciciot", "peer"]
    mp, mj = Manifest.read(plain / "manifest.json"), Manifest.read(joined / "manifest.json")
    assert mj.config == mp.config and mj.datasets == mp.datasets and mj.dataset == mp.dataset
    assert set(mj.timings_s) == set(mp.timings_s) and mj.status == "complete"
    assert sorted(p.name for p in (joined / "artifacts").iterdir()) == \
        sorted(p.name for p in (plain / "artifacts").iterdir())
    assert mj.sections["joined"]["tasks"].keys() == {"ciciot", "peer"} and "## Tuning" in \
        (joined / "report.md").read_text()


def _fake_sweep(tmp: Path, exp: str, seeds: list[int], outcomes: list[dict]) -> Path:
    """A finished sweep's record as the driver writes it, for the checks that need no training."""
    from chimera.formats.rundir import Manifest
    d = tmp / "sweep-x" / "20260101-000000-default"
    m = Manifest(experiment="sweep-x", run_id=d.name, target="default", status="complete", kind="sweep",
                 sections={"sweep": {"experiment": exp, "seeds": seeds, "target": "reference", "executor": "ray",
                                     "planned_tasks": [{"task": o["task"], "cell": o["cell"]} for o in outcomes]}})
    for o in outcomes:
        (d / "tasks" / o["task"]).mkdir(parents=True)
        (d / "tasks" / o["task"] / "outcome.json").write_text(json.dumps(o))
    (d / "manifest.json").write_text(json.dumps(m.to_json()))
    return d


@pytest.mark.parametrize("case, match", [
    ("seeds", "a run has one seed"), ("cells", "cells"),
    ("failed", r"did not finish: seed1-peer-all: failed \(ConfigError: boom\)"), ("commits", "2 commits"),
    ("elsewhere", "not under")])
def test_join_refuses_what_is_not_one_run(case: str, match: str, tmp_path: Path) -> None:
    """Several seeds, a kind's cells, a failed task, two commits, task runs on another node: each is not one run,
    and is refused with its reason before anything is written."""
    from chimera.errors import ResultsError
    from chimera.sweep.join import join
    exp = _yaml(tmp_path, TWO_SETS, "tiny-accuracy.yaml")
    ok = [{"task": f"seed1-{d}-all", "cell": {"dataset": d, "seed": 1}, "status": "ok",
           "manifest": {"run_id": "r", "git": {"commit": "a" * 40}}} for d in TWO_SETS["datasets"]]
    seeds = [1, 2] if case == "seeds" else [1]
    if case == "cells":
        ok[0]["cell"]["variant"] = "Chimera"
    if case == "failed":
        ok[1].update(status="failed", error="ConfigError: boom")
    if case == "commits":
        ok[1]["manifest"]["git"]["commit"] = "b" * 40
    with pytest.raises(ResultsError, match=match):
        join(_fake_sweep(tmp_path, exp, seeds, ok), tmp_path / "j")
    assert not (tmp_path / "j").exists()


def test_sweep_join_refuses_before_any_task_runs(tmp_path: Path) -> None:
    """`invoke sweep --join` over several seeds, or over a kind's cells, is refused before the tasks run."""
    from chimera.errors import ResultsError
    from chimera.sweep.join import joinable
    with pytest.raises(ResultsError, match="a run has one seed"):
        joinable(_yaml(tmp_path, TWO_SETS, "tiny-accuracy.yaml"), [1, 2])
    with pytest.raises(ResultsError, match="cells"):
        joinable(_yaml(tmp_path, TINY), [1])
    joinable(_yaml(tmp_path, TWO_SETS, "tiny-accuracy.yaml"), [1])


def test_a_stopped_sweep_resumes_with_the_tasks_it_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep stopped part-way (killed: its .partial folder) is resumed: the tasks it completed are reused, copied
    into the new sweep and marked, only the others run, and the merged tables are those of a sweep that ran
    through. One that planned other tasks is refused."""
    import shutil

    import chimera.sweep.driver as D
    from chimera.errors import ConfigError
    from chimera.formats.rundir import Manifest
    exp = _yaml(tmp_path, TINY)
    whole = sweep(exp, [1, 2], results_root=tmp_path / "a", data_root=ROOT / "data", executor="sequential")
    stopped = whole.parent / f".{whole.name}.partial"      # as a killed sweep leaves it: one task not finished
    shutil.copytree(whole, stopped)
    planned = [t["task"] for t in Manifest.read(whole / "manifest.json").sections["sweep"]["planned_tasks"]]
    second = planned[-1]
    shutil.rmtree(stopped / "work" / second / "results")
    ran: list[str] = []
    on_disk: list[Manifest] = []   # the manifest a sweep killed now would leave
    real = D.run_task

    def counted(t, *a):  # type: ignore[no-untyped-def]
        ran.append(t.name)
        on_disk.extend(Manifest.read(p) for p in (tmp_path / "b").glob("sweep-*/.*.partial/manifest.json"))
        return real(t, *a)
    monkeypatch.setattr(D, "run_task", counted)
    again = sweep(exp, [1, 2], results_root=tmp_path / "b", data_root=ROOT / "data", executor="sequential",
                  resume=stopped)
    assert ran == [second]
    # a sweep killed while its tasks run can be resumed: its manifest names the commit and the plan from the
    # start (seen failing with the manifest written only at the end: a killed sweep said commit None)
    assert on_disk and on_disk[0].git.commit and on_disk[0].sections["sweep"]["planned_tasks"]
    sw = Manifest.read(again / "manifest.json").sections["sweep"]
    assert sw["resumed_from"] == str(stopped)
    assert [bool(t.get("reused")) for t in sw["tasks"]] == [True] * (len(planned) - 1) + [False]
    first = sw["tasks"][0]["task"]
    assert (again / "work" / first / "results").is_dir()      # the reused run travels with the sweep
    for name in ("hyper_dim.csv",):
        a, b = pd.read_csv(whole / name), pd.read_csv(again / name)
        pd.testing.assert_frame_equal(a.drop(columns=[c for c in a if "seconds" in c]),
                                      b.drop(columns=[c for c in b if "seconds" in c]))
    with pytest.raises(ConfigError, match="planned other tasks"):   # a task the new plan does not hold
        sweep(exp, [1], results_root=tmp_path / "c", data_root=ROOT / "data", executor="sequential",
              resume=stopped)
    # more seeds extend a finished sweep: its tasks are reused, only the new seed's run (seen refused before)
    ran.clear()
    more = sweep(exp, [1, 2, 3], results_root=tmp_path / "d", data_root=ROOT / "data", executor="sequential",
                 resume=whole)
    tasks = Manifest.read(more / "manifest.json").sections["sweep"]["tasks"]
    assert ran and all(n not in planned for n in ran) and sum(bool(t.get("reused")) for t in tasks) == len(planned)
    for name in ("hyper_dim.csv",):
        a, b = pd.read_csv(whole / name), pd.read_csv(more / name)
        b = b[b["seed"].isin(a["seed"].unique())].reset_index(drop=True) if "seed" in b else b
        pd.testing.assert_frame_equal(a.drop(columns=[c for c in a if "seconds" in c]),
                                      b.drop(columns=[c for c in b if "seconds" in c]))


def test_a_sweep_is_resumed_only_on_the_code_it_started_on(tmp_path: Path) -> None:
    """invoke sweep --resume refuses a stopped sweep made from uncommitted code, and one whose code has changed
    since its commit (a published sweep's manifest, dated back to before the last change of the sweep driver)."""
    import json
    import shutil
    import subprocess

    from chimera.book.resume import same_code
    from chimera.errors import ResultsError
    src = sorted((ROOT / "results" / "published" / "sweep-accuracy").glob("*/manifest.json"))[-1]
    from chimera.report.provenance import canonical
    rel = "chimera/sweep/driver.py"

    def at(rev: str) -> bytes:
        return canonical(rel, subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ROOT, capture_output=True,
                                             check=True).stdout)
    # the newest commit that changed the driver's code (a commit that only touched its comments changed nothing)
    commits = subprocess.run(["git", "log", "--format=%H", "--", rel], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    last = next(c for c in commits if at(c) != at(f"{c}~1"))
    old = tmp_path / "old"
    old.mkdir()
    m = json.loads(src.read_text())
    m["git"] = {"commit": f"{last}~1", "dirty": False}
    (old / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ResultsError, match="changed since"):
        same_code(old)
    m["git"]["dirty"] = True
    (old / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ResultsError, match="uncommitted code"):
        same_code(old)
    with pytest.raises(ResultsError, match="no manifest"):
        same_code(tmp_path)


def test_a_stopped_sweep_carried_to_the_next_machine_resumes_there(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The end of a session takes the machine, and a stopped sweep's .partial folder with it (an 8-hour iscxvpn
    sweep never fitted a 3-hour session). `invoke carry` keeps its finished tasks under results/carried/ (committed):
    their manifests and tables only, the copy naming no process (the next machine may reuse the host name and the
    pid). There the resume finds it, runs only the task left, merges the tables of a sweep that ran through, and
    publishing that sweep drops the carried copy. Refused: a complete sweep, one that finished no task."""
    import shutil
    import socket

    import chimera.book.carry as C
    import chimera.book.resume as R
    import chimera.sweep.driver as D
    from chimera.errors import ResultsError
    from chimera.formats.rundir import Manifest
    checked: list[Path] = []
    monkeypatch.setattr(C, "same_code", lambda p: checked.append(Path(p)))   # test_a_sweep_is_resumed_only_on_...
    monkeypatch.setattr(R, "same_code", lambda p: None)
    exp = _yaml(tmp_path, TINY)
    whole = sweep(exp, [1, 2], results_root=tmp_path / "a", data_root=ROOT / "data", executor="sequential")
    with pytest.raises(ResultsError, match="complete"):
        C.carry(whole, tmp_path / "carried")
    stopped = whole.parent / f".{whole.name}.partial"     # still running when the session ends: one task left
    shutil.copytree(whole, stopped)
    m = Manifest.read(stopped / "manifest.json")
    m.record(status="running", pid=os.getpid(), host=socket.gethostname())
    (stopped / "manifest.json").write_text(json.dumps(m.to_json(), default=str))
    planned = [t["task"] for t in m.sections["sweep"]["planned_tasks"]]
    shutil.rmtree(stopped / "work" / planned[-1] / "results")
    first_run = next((stopped / "work" / planned[0] / "results").glob("*/*/manifest.json")).parent
    (first_run / "model.pt").write_bytes(b"\0" * 4096)   # heavy: a resume does not read it
    assert C.unfinished_here(tmp_path / "a") == [stopped]
    checked.clear()
    got = C.carry(stopped, tmp_path / "carried")
    assert checked == [stopped.resolve()]
    assert got.path == tmp_path / "carried" / whole.parent.name / stopped.name and got.parts == planned[:-1]
    kept = {p.relative_to(got.path).as_posix() for p in got.path.rglob("*") if p.is_file()}
    assert "manifest.json" in kept and all(k.endswith((".csv", "manifest.json")) for k in kept), kept
    assert len([k for k in kept if k.endswith("manifest.json")]) == len(planned)   # the sweep's and its tasks'
    # carried while it ran, and then finished here: publishing it drops the carried copy
    twin = C.carry(stopped, tmp_path / "twin")
    assert C.drop_resumed(whole, tmp_path / "twin") == [twin.path] and not any((tmp_path / "twin").iterdir())
    carried = Manifest.read(got.path / "manifest.json")
    assert carried.pid == 0 and carried.sections[C.SECTION]["pid"] == os.getpid()

    # the next machine: no results/ of its own, the carried folder from git
    found = R.stopped_runs(tmp_path / "b" / whole.parent.name, lambda m, p: True, carried=tmp_path / "carried")
    assert found == [got.path]
    ran: list[str] = []
    real = D.run_task

    def counted(t, *a):  # type: ignore[no-untyped-def]
        ran.append(t.name)
        return real(t, *a)
    monkeypatch.setattr(D, "run_task", counted)
    again = sweep(exp, [1, 2], results_root=tmp_path / "b", data_root=ROOT / "data", executor="sequential",
                  resume=found[0])
    assert ran == [planned[-1]]
    a, b = pd.read_csv(whole / "hyper_dim.csv"), pd.read_csv(again / "hyper_dim.csv")
    pd.testing.assert_frame_equal(a.drop(columns=[c for c in a if "seconds" in c]),
                                  b.drop(columns=[c for c in b if "seconds" in c]))
    assert C.drop_resumed(again, tmp_path / "carried") == [got.path]
    assert not any((tmp_path / "carried").iterdir())
    for task in planned[:-1]:
        shutil.rmtree(stopped / "work" / task / "results")
    with pytest.raises(ResultsError, match="finished no task"):
        C.carry(stopped, tmp_path / "carried")
    assert C.tree_bytes() <= C.BUDGET_BYTES     # what this checkout carries (committed)
