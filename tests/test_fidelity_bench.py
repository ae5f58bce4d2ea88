"""The fidelity bench's diagnosis: its input families cover the fair inputs, its windows are the baselines'
windows, and docs/fidelity.md is rendered from a run directory alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chimera.baselines.features import WindowSpec, column, fair_inputs, window_features, windowed
from chimera.bench import fidelity as F
from chimera.metrics.intervals import ci95
from chimera.data.flows import Flows


def test_families_partition_the_fair_inputs() -> None:
    """Every column every method reads is removed by exactly one family or kept on purpose: a new input of
    Chimera's (hence of the fair inputs) must be placed in the diagnosis."""
    spec = fair_inputs(8)
    columns = set(spec.fields) | set(spec.extra)
    named = [c for cols in F.FAMILIES.values() for c in cols]
    assert len(named) == len(set(named))
    assert set(named) | set(F.KEPT) == columns
    assert not set(named) & set(F.KEPT)


def _flows() -> Flows:
    fid = np.array([0, 1, 0, 0, -1, 1, 0])
    idx = np.array([0, 0, 1, 2, 0, 1, 3])
    z = np.zeros(fid.size)
    return Flows(fid, np.zeros(fid.size, np.int64), idx, z, z, z)


def test_windowed_lags_follow_the_flow() -> None:
    flows = _flows()
    cols = {"a": np.arange(10, 17), "b": np.arange(100, 107)}
    out = windowed(flows, np.array([6, 5, 4]), WindowSpec(window=3, fields=("a",), extra=("b",)), cols)
    # packet 6 is flow 0's fourth packet: lags are its packets 3, 2 (index 2, 1); packet 5 has one predecessor (1)
    assert out.tolist() == [[16, 13, 12, 106], [15, 11, -1, 105], [-1, -1, -1, 104]]


def test_window_features_is_windowed_over_exact_columns(tmp_path: Path) -> None:
    from chimera.data.synthetic import SyntheticSpec, generate
    from chimera.data.dataset import load_dataset
    from chimera.data.tokens import tokenize
    ds = load_dataset(generate(SyntheticSpec(profile="peerrush", flows=30, seed=3, duration_s=5,
                                             max_packets_per_flow=20), tmp_path / "d"))
    tok = tokenize(ds.table, ds.flows)
    spec = fair_inputs(4)
    rows = np.flatnonzero(ds.flows.flow_id >= 0)
    cols = {c: column(c, ds.table, tok, ds.flows) for c in (*spec.fields, *spec.extra)}
    assert np.array_equal(window_features(ds.table, tok, ds.flows, rows, spec), windowed(ds.flows, rows, spec, cols))


def _fake_run(d: Path) -> None:
    rows = []
    for name in ("a (synthetic)", "b (real)"):
        for seed in (1, 2, 3, 11, 13):  # development and held-out seeds
            r = {"data": name, "seed": seed, "test_packets": 100, "test_flows": 5, "goal_met": seed != 2,
                 "window": 8, "chosen_window": 8 if seed != 2 else 1}
            for c in ("chimera_int_f1", "chimera_float_f1", "forest_f1", "tree_f1", "gap_to_forest",
                      "margin_over_tree", *(c for c, _ in F.DIAGNOSIS)):
                r[c] = 0.5 + 0.01 * seed
            rows.append(r)
    table = pd.DataFrame(rows)
    table.to_csv(d / "fidelity.csv", index=False)
    F.summarize(table).to_csv(d / "summary.csv", index=False)
    per = pd.DataFrame([{"data": n, "seed": s, "method": m, "class": c, "precision": 1, "recall": 1, "f1": 0.25,
                         "support": 10} for n in ("a (synthetic)", "b (real)") for s in (1, 2, 3)
                        for m in ("Chimera", "tree", "forest") for c in ("X", "Y")])
    per.to_csv(d / "per_class.csv", index=False)
    pd.DataFrame([{"data": "b (real)", "seed": 3, "reason": "no test flow of class Y"}]).to_csv(d / "unscored.csv",
                                                                                                index=False)


def test_doc_tables_are_rendered_from_the_run_directory(tmp_path: Path) -> None:
    _fake_run(tmp_path)
    text = F.tables_markdown(tmp_path, "results/published/bench-fidelity/RUN")
    assert "`results/published/bench-fidelity/RUN`" in text
    # each seed set apart: development 0.51, 0.52, 0.53 and held-out 0.61, 0.63, each mean with its t-interval
    assert "| a (synthetic) | development (1, 2, 3) | 100 (5) | 0.520 ± 0.025 |" in text
    assert "| a (synthetic) | held-out (11, 13) | 100 (5) | 0.620 ± 0.127 |" in text
    assert text.index("| a (synthetic) | development") < text.index("| a (synthetic) | held-out")
    assert "b (real), seed 3: not measurable, so the row's mean and interval are over the other seeds: no test" in text
    assert "**not met** (2/3 seeds) | 8, 1, 8 |" in text
    assert text.count("| b (real) | Y | 10 | — | 0.250 | 0.250 | 0.250 |") == 1   # a run before the flow floor
    assert F.tables_markdown(tmp_path, "results/published/bench-fidelity/RUN") == text  # from the files alone
    # with the floor: a class no seed scored says so; one some seeds scored averages those
    per = pd.read_csv(tmp_path / "per_class.csv")
    per["test_flows"] = np.where(per["class"] == "Y", 3, 9)
    per.loc[per["class"] == "Y", "f1"] = np.nan
    per.loc[(per["data"] == "a (synthetic)") & (per["class"] == "Y") & (per["seed"] == 1), ["f1", "test_flows"]] = [0.5, 6]
    per.to_csv(tmp_path / "per_class.csv", index=False)
    text = F.tables_markdown(tmp_path, "results/published/bench-fidelity/RUN")
    assert "| b (real) | Y | 10 | 3.0 | too few flows | too few flows | too few flows |" in text
    assert "| a (synthetic) | Y | 10 | 4.0 | 0.500 | 0.500 | 0.500 |" in text


def test_ci95_is_the_t_interval() -> None:
    assert np.isnan(ci95([0.5]))
    assert abs(ci95([0.51, 0.52, 0.53]) - 4.302653 * 0.01 / np.sqrt(3)) < 1e-6


def test_responder_port_ids_are_the_former_rule() -> None:
    from types import SimpleNamespace
    sport = np.array([40000, 80, 40000, 5000, 6000])
    dport = np.array([80, 40000, 443, 6000, 5000])
    d = np.array([0, 1, 0, 0, 1])  # responder ports: 80, 80, 443, 6000, 6000
    data = SimpleNamespace(ds=SimpleNamespace(table=SimpleNamespace(sport=sport, dport=dport)),
                           train_rows=np.arange(5), tokens=SimpleNamespace(direction=d))
    ids = F.responder_port_ids(data)  # type: ignore[arg-type]
    # 80 and 6000 tie at two (the lower port first: ids 1, 2), then 443 (id 3)
    assert ids.tolist() == [1 * 2 + 0, 1 * 2 + 1, 3 * 2 + 0, 2 * 2 + 0, 2 * 2 + 1]


def test_a_seed_that_cannot_be_scored_is_reported_not_fatal(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A split with a class absent from the test set (tiny real data) is recorded for that seed; the bench goes on
    with the other seeds and never substitutes another seed."""
    from chimera.errors import DatasetError

    def fake(d: F.Data, seed: int, data_root: Path) -> tuple[dict, pd.DataFrame]:
        if seed == 2:
            raise DatasetError("class(es) ['Y'] have no packets in the test split", "use more flows")
        row = {"data": d.name, "real": False, "seed": seed, "test_packets": 10, "test_flows": 2, "goal_met": True,
               "window": 8, "chosen_window": 1,
               **{c: 0.5 for c in ("chimera_int_f1", "chimera_float_f1", "forest_f1", "tree_f1", "gap_to_forest",
                                   "margin_over_tree", *(c for c, _ in F.DIAGNOSIS))}}
        per = pd.DataFrame([{"data": d.name, "seed": seed, "method": m, "class": "X", "precision": 1, "recall": 1,
                             "f1": 1.0, "support": 10} for m in ("Chimera", "tree", "forest")])
        return row, per

    monkeypatch.setattr(F, "measure", fake)
    monkeypatch.setattr(F, "DATA", (F.Data("x (synthetic)", {"synthetic": {}}),))
    table = F.main(results_root=tmp_path, seeds=(1, 2, 3))
    assert table.seed.tolist() == [1, 3]
    run = next((tmp_path / "bench-fidelity").iterdir())
    assert pd.read_csv(run / "unscored.csv").seed.tolist() == [2]
    assert "x (synthetic), seed 2: not measurable" in (run / "report.md").read_text()


def test_the_book_shows_each_kind_of_data_from_the_newest_run_that_has_it(tmp_path: Path) -> None:
    """A run made for some kinds only (``--only``) is the newest of those kinds; the kinds it lacks stay on the
    page from the older run that has them, and nothing is shown twice."""
    import json

    from chimera.bench.blocks import fidelity_runs
    from chimera.book.scope import run_set
    from chimera.report.book import Book
    from chimera.errors import ResultsError
    from chimera.report.provenance import ROOT
    base = tmp_path / "published"
    with pytest.raises(ResultsError, match="invoke bench --what fidelity"):
        fidelity_runs(Book(run_set(base, ROOT), ROOT))
    for rid, kinds in (("20260101-000000-local", ["a (synthetic)", "b (real)"]),
                       ("20260102-000000-local", ["b (real)"]),
                       ("20260103-000000-local", ["c (real)", "b (real)"])):
        d = base / "bench-fidelity" / rid
        d.mkdir(parents=True)
        (d / "manifest.json").write_text(json.dumps({"experiment": "bench-fidelity", "run_id": rid, "target": "local",
                                                     "status": "complete", "git": {"commit": "0" * 40}}))
        pd.DataFrame([{"data": k, "seed": s} for k in kinds for s in (1, 11)]).to_csv(d / "fidelity.csv", index=False)
    got = [(r.run_id, kinds) for r, kinds in fidelity_runs(Book(run_set(base, ROOT), ROOT))]
    assert got == [("20260103-000000-local", ["c (real)", "b (real)"]),
                   ("20260101-000000-local", ["a (synthetic)"])]  # the middle run's only kind is shown newer


def test_typed_rows_derive_their_schema_and_refuse_what_is_not_a_row() -> None:
    """chimera.formats.rows: a table's schema comes from its row class (field order and types, None allowed), a
    frame keeps the columns without a row, and a class that is not a frozen dataclass of plain columns, or a row
    of another class, is refused (seen passing a mutable dataclass before the frozen check)."""
    from dataclasses import dataclass

    from chimera.bench.directions import DIRECTIONS, ArmRow
    from chimera.formats.rows import columns_of, frame, schema_of

    @dataclass(frozen=True)
    class R:
        name: str
        n: int
        x: float | None
        ok: bool

    assert columns_of(R) == {"name": "str", "n": "int", "x": "float", "ok": "bool"}
    s = schema_of(R, "r.csv", keys=("name",))
    assert s.columns == columns_of(R) and s.keys == ("name",)
    assert frame([], R).columns.tolist() == ["name", "n", "x", "ok"]
    assert frame([R("a", 1, None, True)], R).iloc[0].tolist()[:2] == ["a", 1]
    with pytest.raises(TypeError, match="rows of R expected"):
        frame([("a", 1, None, True)], R)

    @dataclass
    class Loose:
        a: int
    with pytest.raises(TypeError, match="frozen dataclass"):
        columns_of(Loose)

    @dataclass(frozen=True)
    class Nested:
        a: list[int]
    with pytest.raises(TypeError, match="Nested.a: a column must be"):
        columns_of(Nested)
    assert list(DIRECTIONS.columns) == list(columns_of(ArmRow)) and DIRECTIONS.keys == ("data", "seed", "arm")


def test_the_directions_bench_writes_its_typed_rows(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """bench --what directions, its measurement faked: the rows it writes are its row class's columns, an
    unscored seed is its own typed row, and the decision is recorded as a typed record."""
    import chimera.bench.directions as Dn
    from chimera.errors import DatasetError
    from chimera.formats.rundir import Manifest

    def fake(d: F.Data, seed: int, data_root: Path) -> list[Dn.ArmRow]:
        if seed == 2:
            raise DatasetError("class(es) ['Y'] have no packets in the test split", "use more flows")
        return [Dn.ArmRow(d.name, False, seed, F.seed_set(seed), arm, 0.5 + 0.01 * i, 0.5, 3, "patience", 0.0,
                          "hybrid", float("nan")) for i, arm in enumerate(Dn.ARMS)]
    monkeypatch.setattr(Dn, "measure", fake)
    monkeypatch.setattr(F, "DATA", (F.Data("x (synthetic)", {"synthetic": {}}),))
    table = Dn.main(results_root=tmp_path, seeds=(1, 2, 3))
    assert sorted(set(table.seed)) == [1, 3] and list(table.columns) == list(Dn.DIRECTIONS.columns)
    run = next((tmp_path / "bench-directions").iterdir())
    assert F.UNSCORED.read(run).seed.tolist() == [2]
    res = Manifest.read(run / "manifest.json").get("result", Dn.DirectionsResult)
    assert res is not None and res.decisions["recency"].kinds == 1 and res.unscored[0].seed == 2
