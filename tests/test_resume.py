"""A run stopped part-way resumes at its finished units (issue 56: a stability run of 10 seeds x 3 days on a switch
outlives a session): the checkpoints' format, the runner's checks, the stability kind's units, and republish's
choice of the stopped run to resume."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from chimera.errors import ResultsError
from chimera.formats.checkpoints import Checkpoints, NotResumable, Unit

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"dataset": {"synthetic": {"flows": 600, "max_packets_per_flow": 30, "seed": 1}},
         "stability": {"seeds": [1, 2], "days": [1, 2], "bin_minutes": 180, "bootstrap": 0, "oracle_seeds": 1,
                       "oracle_every_hours": 9, "configurations": ["Static-Map", "Chimera", "Oracle"],
                       "diagnose": False, "drift_knobs": False}}


def test_a_checkpoint_holds_its_unit_and_refuses_what_it_does_not(tmp_path: Path) -> None:
    store = Checkpoints(tmp_path)
    assert store.keys() == [] and store.get("day1-seed1", dict) is None
    store.put(Unit("day1-seed1", {"f1": 0.5}, {"train": 1.5}))
    got = store.get("day1-seed1", dict)
    assert got is not None and got.value == {"f1": 0.5} and got.timings == {"train": 1.5}
    assert store.keys() == ["day1-seed1"] and not list(store.folder.glob("*.tmp"))
    with pytest.raises(ResultsError, match="not a checkpoint of list"):
        store.get("day1-seed1", list)
    store.path("day1-seed1").write_bytes(b"\x80\x05 half a file")
    with pytest.raises(ResultsError, match="damaged checkpoint"):
        store.get("day1-seed1", dict)
    with pytest.raises(ValueError, match="letters, digits"):
        store.path("../elsewhere")
    store.clear()
    assert not store.folder.exists()


def _tables(run: Path) -> dict[str, pd.DataFrame]:
    return {p.name: pd.read_csv(p) for p in sorted(run.glob("*.csv"))}


def test_a_stopped_stability_run_resumes_at_its_finished_units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped (Ctrl-C) after the first day's two seeds, the run keeps them as checkpoints; resumed, it trains only
    the second day's seeds (and the first seed once more, for the day's drift tables), and its tables equal those
    of a run that went through. The completed run holds no checkpoint, and its manifest says what it took."""
    import chimera.experiments.kinds.stability.run as R
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    from chimera.formats.rundir import Manifest
    cfg = load_experiment("adaptations", SMALL)
    whole = run_experiment(cfg, target="reference", results_root=tmp_path / "a", data_root=ROOT / "data")
    real = R.build_models
    trained: list[tuple[int, str]] = []

    def stop_on_the_second_day(ctx: Any, data: Any, rules: Any, seed: int | None = None, day: str = "") -> Any:
        if day == "-day2":
            raise KeyboardInterrupt
        trained.append((seed or 0, day))
        return real(ctx, data, rules, seed, day)
    monkeypatch.setattr(R, "build_models", stop_on_the_second_day)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, target="reference", results_root=tmp_path / "b", data_root=ROOT / "data")
    stopped = next((tmp_path / "b" / cfg.name / ".failed").iterdir())
    assert Checkpoints(stopped).keys() == ["day1-seed1", "day1-seed2"]
    m = Manifest.read(stopped / "manifest.json")
    assert m.git.commit and m.config == Manifest.read(whole / "manifest.json").config   # on disk from the start

    def counted(ctx: Any, data: Any, rules: Any, seed: int | None = None, day: str = "") -> Any:
        trained.append((seed or 0, day))
        return real(ctx, data, rules, seed, day)
    monkeypatch.setattr(R, "build_models", counted)
    trained.clear()
    again = run_experiment(cfg, target="reference", results_root=tmp_path / "b", data_root=ROOT / "data",
                           resume=stopped)
    assert trained == [(1, "-day1"), (1, "-day2"), (2, "-day2")]
    assert not (again / "checkpoints").exists()
    m = Manifest.read(again / "manifest.json")
    assert m.resumed_from == str(stopped) and m.resumed_units == ["day1-seed1", "day1-seed2"]
    assert m.timings_s.get("target:Static-Map", 0) > 0
    a, b = _tables(whole), _tables(again)
    assert sorted(a) == sorted(b)
    timed = {"propose_ms", "install_p50_ms", "budget_ratio"}   # wall-clock measures of the control loop
    for name in a:
        for c in set(a[name].columns) - timed:
            pd.testing.assert_series_equal(a[name][c], b[name][c], obj=f"{name}: {c}")


def _stopped(tmp_path: Path, **change: Any) -> Path:
    """A stopped run's folder, as the runner leaves it, with ``change`` made to its manifest."""
    from chimera.experiments.kinds import kind_of
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import resolve_clock
    from chimera.formats.rundir import Manifest, git_state
    cfg = load_experiment("adaptations", SMALL)
    cfg = kind_of(cfg.kind).resolve(cfg, resolve_clock(cfg))    # as the runner records it
    d = tmp_path / "adaptations" / ".failed" / "20260101-000000-reference"
    d.mkdir(parents=True, exist_ok=True)
    m = Manifest(experiment="adaptations", run_id=d.name, target="reference", status="failed",
                 config=json.loads(cfg.model_dump_json()), git=git_state(ROOT), host="elsewhere")
    for k, v in change.items():
        setattr(m, k, v)
    (d / "manifest.json").write_text(json.dumps(m.to_json()))
    return d


@pytest.mark.parametrize(("change", "words"), [
    ({"status": "complete"}, "that run completed"),
    ({"status": "running", "pid": os.getpid(), "host": "HERE"}, "still going"),
    ({"target": "ebpf"}, "a run of adaptations on ebpf"),
    ({"experiment": "stability24h"}, "a run of stability24h on reference"),
    ({"config": {"name": "adaptations"}}, "configuration differs"),
])
def test_resume_refuses_what_is_not_this_runs_stopped_run(tmp_path: Path, change: dict[str, Any], words: str) -> None:
    """Refused before any run directory exists: another run's folder, a running or finished run, another
    configuration (the code is checked by same_code: test_sweep)."""
    import socket

    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    if change.get("host") == "HERE":
        change = {**change, "host": socket.gethostname()}
    stopped = _stopped(tmp_path, **change)
    with pytest.raises(NotResumable, match=words):
        run_experiment(load_experiment("adaptations", SMALL), target="reference", results_root=tmp_path / "new",
                       data_root=ROOT / "data", resume=stopped)
    assert not (tmp_path / "new").exists()


def test_republish_resumes_the_newest_stopped_run_of_the_same_code(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Only stopped runs count (not a complete or a running one), of the same code (same_code), newest first."""
    import socket

    import chimera.book.resume as P
    checked: list[str] = []

    def code(p: Path) -> None:
        checked.append(p.name)
        if "old-code" in p.name:
            raise ResultsError("changed since", "start afresh")
    monkeypatch.setattr(P, "same_code", code)
    folder = tmp_path / "exp"
    (folder / ".failed").mkdir(parents=True)

    def at(name: str, status: str, pid: int = 0) -> Path:
        d = folder / name
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"experiment": "exp", "run_id": name.strip("."),
                                                     "target": "reference", "status": status, "pid": pid,
                                                     "host": socket.gethostname()}))
        return d
    older = at(".failed/20260101-000000-reference", "failed")
    newer = at(".20260102-000000-reference.partial", "running", pid=2 ** 22 + 12345)   # killed: no such process
    at(".20260103-000000-reference.partial", "running", pid=os.getpid())               # still going
    at("20260104-000000-reference", "complete")
    at(".failed/20260105-000000-reference-old-code", "failed")
    assert P.stopped_runs(folder, lambda m, p: True) == [newer, older]
    assert P.stopped_runs(folder, lambda m, p: p != newer) == [older]
    shutil.rmtree(folder)
    assert P.stopped_runs(folder, lambda m, p: True) == []


def test_a_stopped_cadence_run_resumes_at_its_finished_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hyper_cadence_slow (113 min on a switch) resumes at its (seed, eta, T_cp) cells: stopped in its third cell,
    it keeps the static day and the first two cells; resumed, it replays only the rest, and its tables equal those
    of a run that went through."""
    import chimera.experiments.kinds.cadence.run as R
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    over = {"dataset": {"synthetic": {"flows": 600, "max_packets_per_flow": 30}},
            "stability": {"seeds": [1], "bin_minutes": 180, "bootstrap": 0},
            "cadence": {"rows": [[0.1, 600], [0.3, 600], [0.1, 1800]]}}
    cfg = load_experiment("hyper_cadence_slow", over)
    whole = run_experiment(cfg, target="reference", results_root=tmp_path / "a", data_root=ROOT / "data")
    real, replayed = R.control_for, []

    def stop_in_the_third_cell(*a: Any, **k: Any) -> Any:
        replayed.append((k["eta"], k["t_cp_s"]))
        if len(replayed) == 3 and stopping:
            raise KeyboardInterrupt
        return real(*a, **k)
    stopping = True
    monkeypatch.setattr(R, "control_for", stop_in_the_third_cell)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, target="reference", results_root=tmp_path / "b", data_root=ROOT / "data")
    stopped = next((tmp_path / "b" / cfg.name / ".failed").iterdir())
    assert Checkpoints(stopped).keys() == ["seed1-eta0-1-tcp600", "seed1-eta0-3-tcp600", "seed1-static"]
    stopping, replayed[:] = False, []
    again = run_experiment(cfg, target="reference", results_root=tmp_path / "b", data_root=ROOT / "data",
                           resume=stopped)
    assert replayed == [(0.1, 1800)]
    a, b = _tables(whole), _tables(again)
    assert sorted(a) == sorted(b)
    timed = {"propose_ms", "install_p50_ms", "budget_ratio"}
    for name in a:
        for c in set(a[name].columns) - timed:
            pd.testing.assert_series_equal(a[name][c], b[name][c], obj=f"{name}: {c}")


def test_a_stopped_accuracy_run_resumes_at_its_finished_datasets(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Table 1's run (two hours on the reference) resumes at its datasets: stopped in the second, it keeps the
    first; resumed, it trains only on the second, and its tables equal those of a run that went through."""
    import chimera.experiments.kinds.accuracy.run as R
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    small = {"flows": 300, "seed": 1, "duration_s": 20, "max_packets_per_flow": 40}
    over = {"datasets": {"ciciot": {"synthetic": {"profile": "ciciot", **small}},
                         "peerrush": {"synthetic": {"profile": "peerrush", **small}}},
            "baselines": {"tuning": "first", "methods": ["Leo", "Tree (yardstick)"]}}
    cfg = load_experiment("accuracy", over)
    whole = run_experiment(cfg, target="reference", results_root=tmp_path / "a", data_root=ROOT / "data")
    real, trained = R.run_chimera, []

    def stop_on_the_second(ctx: Any, nd: Any, *a: Any, **k: Any) -> Any:
        trained.append(nd.name)
        if nd.name == "peerrush" and stopping:
            raise KeyboardInterrupt
        return real(ctx, nd, *a, **k)
    stopping = True
    monkeypatch.setattr(R, "run_chimera", stop_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, target="reference", results_root=tmp_path / "b", data_root=ROOT / "data")
    stopped = next((tmp_path / "b" / cfg.name / ".failed").iterdir())
    assert Checkpoints(stopped).keys() == ["dataset-ciciot"]
    stopping, trained[:] = False, []
    again = run_experiment(cfg, target="reference", results_root=tmp_path / "b", data_root=ROOT / "data",
                           resume=stopped)
    assert trained == ["peerrush"]
    a, b = _tables(whole), _tables(again)
    assert sorted(a) == sorted(b)
    for name in a:
        for c in set(a[name].columns) - {"seconds"}:
            pd.testing.assert_series_equal(a[name][c], b[name][c], obj=f"{name}: {c}")


def test_a_resumed_runs_time_counts_the_units_it_took(tmp_path: Path) -> None:
    """The book's wall time (and republish's estimate) of a resumed run is its stages' seconds, the stopped run's
    units included, not the minutes between its own start and end (seen failing: a run resumed for its last
    unit said 1 minute)."""
    from chimera.formats.rundir import Manifest
    from chimera.report.run import RunView
    from chimera.report.runs import Run
    d = tmp_path / "run"
    d.mkdir()
    m = Manifest(experiment="adaptations", run_id="r", target="reference", status="complete",
                 started="2026-01-01T00:00:00", finished="2026-01-01T00:01:00", timings_s={"train": 600.0, "x": 60.0})
    (d / "manifest.json").write_text(json.dumps(m.to_json()))

    def minutes() -> float:
        return Run(RunView.open(d), "run", tmp_path, None).minutes()  # type: ignore[arg-type]
    assert minutes() == pytest.approx(1.0)
    m.resumed_from = "results/adaptations/.failed/x"
    (d / "manifest.json").write_text(json.dumps(m.to_json()))
    assert minutes() == pytest.approx(11.0)
