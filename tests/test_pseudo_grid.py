"""The pseudo_grid kind: the pseudo-label loop's gate and churn cap chosen on validation days (issue 56 item 2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from chimera.experiments.kinds.pseudo_grid.config import default_cell
from chimera.experiments.kinds.pseudo_grid.run import choose, edge_of
from chimera.experiments.load import available, load_experiment

ROOT = Path(__file__).resolve().parents[1]


def test_the_choice_is_the_highest_difference_and_an_exact_tie_keeps_the_default() -> None:
    d = default_cell()
    assert choose({(0.0, 1): 0.001, d: 0.002, (0.9, 64): 0.003}) == (0.9, 64)
    assert choose({(0.0, 1): 0.003, d: 0.003, (0.9, 64): 0.001}) == d
    assert choose({(0.25, 4): 0.003, (0.75, 4): 0.003, d: 0.0}) == (0.25, 4)   # else the grid's earlier cell


def test_a_choice_at_the_grids_end_binds_where_validation_rises_toward_it_but_never_at_the_settings_own() -> None:
    grid = {(q, c): 0.0 for q in (0.0, 0.5, 0.9) for c in (1, 16, 256)}
    rising = {**grid, (0.9, 16): 0.02}
    edge, binds = edge_of((0.9, 16), rising, global_entries=128)
    assert binds and "gate_quantile=0.9 is the grid's highest" in edge
    flat = {**grid, (0.9, 16): 0.001}
    assert edge_of((0.9, 16), flat, global_entries=128) == (edge_of((0.9, 16), flat, 128)[0], False)
    # the gate's 0 and a cap above the global layer's entries are the settings' own ends: named, never binding
    own = {**grid, (0.0, 256): 0.05}
    edge, binds = edge_of((0.0, 256), own, global_entries=128)
    assert not binds and "no gate" in edge and "caps nothing" in edge
    # an own end on one axis does not hide a binding end on the other (seen failing when either end cleared both)
    mixed = {**grid, (0.9, 1): 0.05}
    edge, binds = edge_of((0.9, 1), mixed, global_entries=128)
    assert binds and "one entry per install" in edge and "gate_quantile=0.9" in edge


@pytest.mark.parametrize("over, match", [
    ({"pseudo_grid": {"role": "validation", "gate_quantile": [0.25, 0.75]}}, "default cell"),
    ({"stability": {"configurations": ["Static-Map", "Chimera+Pseudo"]}}, "control"),
    ({"stability": {"configurations": ["Static-Map", "Chimera"]}}, "no pseudo-label arm"),
    ({"pseudo_grid": {"role": "validation", "gate_quantile": [0.5, 1.0]}}, "less than 1"),
    ({"pseudo_grid": {"role": "validation", "max_entries": [0, 16]}}, "greater than or equal to 1"),
])
def test_a_grid_without_the_default_or_an_arm_without_its_control_is_refused(over: dict, match: str) -> None:
    from chimera.errors import ConfigError
    with pytest.raises((ConfigError, ValueError), match=match):
        load_experiment("pseudo_validation", over)


def _grids() -> list[str]:
    return [e for e in available() if load_experiment(e).kind == "pseudo_grid"]


def test_validation_days_are_the_held_out_day_on_data_no_held_out_run_uses() -> None:
    """A validation run is stability_pseudo's day (every key but the day realizations, the training seeds and what
    the kind adds), and none of its realizations is one a stability day runs, nor its seeds one a held-out day
    lists (seen failing with the validation run on day 1)."""
    day = load_experiment("stability_pseudo")
    held_days = {d for e in available() if load_experiment(e).kind == "stability"
                 for d in load_experiment(e).day_seeds}   # type: ignore[attr-defined]
    # the days that report intervals list their held-out training seeds; a seed only says how a model starts, so a
    # conformance day trained with the experiment's own seed on day 1 shares nothing with a validation day
    held_seeds = {s for e in available() if load_experiment(e).kind == "stability"
                  for s in load_experiment(e).stability.seeds}   # type: ignore[attr-defined]
    vals = [e for e in _grids() if load_experiment(e).pseudo_grid.role == "validation"]   # type: ignore[attr-defined]
    assert vals
    for name in vals:
        v = load_experiment(name)
        assert not set(v.day_seeds) & held_days   # type: ignore[attr-defined]
        assert not set(v.training_seeds) & held_seeds   # type: ignore[attr-defined]
        a, b = v.model_dump(), day.model_dump()
        own = {"name", "kind", "description", "pseudo_grid", "dataset", "stability"}
        assert {k: x for k, x in a.items() if k not in own} == {k: x for k, x in b.items() if k not in own}
        keep = {"seeds", "days", "keep_captures"}
        assert {k: x for k, x in a["stability"].items() if k not in keep} == \
            {k: x for k, x in b["stability"].items() if k not in keep}
        strip = lambda d: {**d, "synthetic": {**d["synthetic"], "seed": None}}   # noqa: E731
        assert strip(a["dataset"]) == strip(b["dataset"])


def test_the_default_cell_is_the_stability_days_own_row(tmp_path: Path) -> None:
    """The grid's default cell replays exactly what the stability day's Pseudo-Label row replays (the same model,
    control settings and loop), so the validation grid and the held-out days measure one loop; seen failing with
    the cell's loop run on the fast-path artifact."""
    from chimera.experiments.runner import run_experiment
    syn = load_experiment("pseudo_validation").model_dump(exclude_none=True)["dataset"]["synthetic"]
    small = {"dataset": {"synthetic": {**syn, "flows": 600, "max_packets_per_flow": 30}},
             "stability": {"seeds": [1], "days": [101], "bin_minutes": 180, "bootstrap": 0,
                           "configurations": ["Static-Map", "Pseudo-Label"]}}
    grid = run_experiment(load_experiment("pseudo_validation", {**small, "pseudo_grid": {
        "role": "validation", "cells": [list(default_cell()), [0.0, 1]]}}), target="reference",
        results_root=tmp_path, data_root=ROOT / "data")
    day = run_experiment(load_experiment("stability_pseudo", small), target="reference", results_root=tmp_path,
                         data_root=ROOT / "data")
    cols = ["f1_mean", "f1_first", "f1_last", "f1_worst_bin", "installs", "churn_total"]
    units = pd.read_csv(grid / "pseudo_grid_units.csv")
    seeds = pd.read_csv(day / "stability_seeds.csv").set_index("configuration")
    at = units[(units["gate_quantile"] == default_cell()[0]) & (units["max_entries"] == default_cell()[1])]
    assert len(at) == 1 and at.iloc[0][cols].tolist() == seeds.loc["Pseudo-Label", cols].tolist()
    ctl = units[units["configuration"] == "Static-Map"]
    assert ctl.iloc[0][cols].tolist() == seeds.loc["Static-Map", cols].tolist()
    other = units[units["gate_quantile"] == 0.0].iloc[0]
    assert other["churn_total"] != at.iloc[0]["churn_total"]   # the cell's settings reach the loop
    g = pd.read_csv(grid / "pseudo_grid.csv")
    assert g["chosen"].sum() == 1 and bool(g.loc[g["chosen"], "default"].iloc[0]) in (True, False)
    assert "validation chose" in (grid / "report.md").read_text()


def test_a_held_out_run_is_the_held_out_day_itself() -> None:
    """A held-out run replays stability_pseudo's day exactly (its realizations and seeds included) and chooses
    nothing (seen failing with the held-out run on a validation realization)."""
    day = load_experiment("stability_pseudo").model_dump()
    helds = [e for e in _grids() if load_experiment(e).pseudo_grid.role == "held-out"]   # type: ignore[attr-defined]
    assert helds
    for name in helds:
        h = load_experiment(name).model_dump()
        own = {"name", "kind", "description", "pseudo_grid", "stability"}
        assert {k: x for k, x in h.items() if k not in own} == {k: x for k, x in day.items() if k not in own}
        assert {k: x for k, x in h["stability"].items() if k != "keep_captures"} == \
            {k: x for k, x in day["stability"].items() if k != "keep_captures"}
        assert tuple(h["pseudo_grid"]["cells"][0]) == default_cell()


def _publish(base: Path, experiment: str, rid: str, rows: list[dict]) -> None:
    import json
    d = base / experiment / rid
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({"experiment": experiment, "run_id": rid, "target": "reference",
                                                 "status": "complete", "git": {"commit": None, "dirty": True}}))
    pd.DataFrame(rows).to_csv(d / "pseudo_grid.csv", index=False)


def _row(q: float, cap: int, diff: float, chosen: bool = False) -> dict:
    return {"arm": "Pseudo-Label", "control": "Static-Map", "gate_quantile": q, "max_entries": cap,
            "default": (q, cap) == default_cell(), "diff": diff, "lo": diff - 0.01, "hi": diff + 0.01,
            "chosen": chosen, "at_edge": "", "edge_binds": False, "installs": 10, "churn_total": 10}


def test_the_block_quotes_held_out_numbers_only_for_what_validation_chose(tmp_path: Path) -> None:
    """The pseudo-grid block: the default kept needs no held-out run; a moved choice asks for one; a held-out run
    without the chosen cell is named as such; one with it is quoted in words no wider than its intervals (each
    branch seen in the text)."""
    from chimera.book.scope import run_set
    from chimera.experiments.kinds.pseudo_grid.blocks import pseudo_grid
    from chimera.report.book import Book
    from chimera.report.provenance import ROOT as REPO
    base = tmp_path / "published"
    q, c = default_cell()

    def text() -> str:
        return pseudo_grid(Book(run_set(base, REPO), REPO))
    assert "No validation run" in text()
    _publish(base, "pseudo_validation", "20260101-000000-reference", [_row(q, c, 0.001, True), _row(0.9, 1, 0.0)])
    assert "keeps the default cell for every arm" in text()
    _publish(base, "pseudo_validation", "20260102-000000-reference", [_row(q, c, 0.0), _row(0.9, 1, 0.002, True)])
    assert "no held-out run of the chosen cells is published yet" in text()
    _publish(base, "pseudo_heldout", "20260103-000000-reference", [_row(q, c, 0.0), _row(0.25, 4, 0.02)])
    assert "does not run what validation chose (Pseudo-Label at gate 0.9, cap 1)" in text()
    _publish(base, "pseudo_heldout", "20260104-000000-reference", [_row(q, c, 0.0), _row(0.9, 1, 0.02)])
    t = text()
    assert "gate 0.9, cap 1 (chosen on validation): Pseudo-Label measurably above Static-Map" in t
    assert f"gate {q:g}, cap {c} (default): no measurable difference" in t


def test_the_held_out_default_cell_is_checked_row_for_row_against_the_days_own_run() -> None:
    """same_rows compares the controls and the default cell only; a row off by 1e-12 in one column, or missing
    from the day's run, is not equal (seen failing with the chosen cells compared too)."""
    from chimera.experiments.kinds.pseudo_grid.blocks import same_rows
    from chimera.experiments.kinds.stability.blocks import SAME_ON_BOTH as SAME
    q, c = default_cell()
    base = {k: 0.5 for k in SAME}
    units = pd.DataFrame([
        {"configuration": "Static-Map", "day": 1, "seed": 11, "gate_quantile": None, "max_entries": None, **base},
        {"configuration": "Pseudo-Label", "day": 1, "seed": 11, "gate_quantile": q, "max_entries": c, **base},
        {"configuration": "Pseudo-Label", "day": 2, "seed": 11, "gate_quantile": q, "max_entries": c, **base},
        {"configuration": "Pseudo-Label", "day": 1, "seed": 11, "gate_quantile": 0.9, "max_entries": 1,
         **{**base, "f1_mean": 0.9}}])
    day = pd.DataFrame([
        {"configuration": "Static-Map", "day": 1, "seed": 11, **base},
        {"configuration": "Pseudo-Label", "day": 1, "seed": 11, **{**base, "f1_last": 0.5 + 1e-12}}])
    assert same_rows(units, day) == (1, 3)


def test_the_row_check_names_each_runs_cpu_and_calls_it_across_machines_only_where_they_differ() -> None:
    """The held-out block's row check is the pins' evidence across machines only when the two runs' CPUs differ;
    a run made before the CPU record is said to lack it (seen failing with the two CPUs' words swapped for one)."""
    from types import SimpleNamespace as NS

    from chimera.experiments.kinds.pseudo_grid.blocks import _machines, cpu_words

    def run(cpu: dict | None) -> NS:
        return NS(manifest=NS(environment={} if cpu is None else {"cpu": cpu}))
    wide = run({"model": "AMD EPYC", "isa": ["avx2", "fma", "avx512f"], "pinned": "avx2"})
    narrow = run({"model": "AMD EPYC", "isa": ["avx2", "fma"], "pinned": "avx2"})
    native = run({"model": "AMD EPYC", "isa": ["avx2", "fma", "avx512f"], "pinned": "native"})
    assert cpu_words(wide) == "AMD EPYC (avx2, fma, avx512f; pinned to AVX2)"
    assert cpu_words(native) == "AMD EPYC (avx2, fma, avx512f; unpinned)"
    assert cpu_words(run(None)) is None
    assert _machines(wide, narrow) == (" (the held-out run made on AMD EPYC (avx2, fma, avx512f; pinned to AVX2); "
                                       "the day's run on AMD EPYC (avx2, fma; pinned to AVX2))")
    assert _machines(narrow, narrow).startswith(" (both made on AMD EPYC (avx2, fma;")
    assert "records no CPU" in _machines(run(None), narrow)
