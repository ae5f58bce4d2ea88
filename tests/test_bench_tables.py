"""What the BMv2 benches write, checked without BMv2: their tables are built by pure functions (issue 58's
defects: a ladder written under another's header, a rate of "0.0 pps" that meant "below the lowest step")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from chimera.bench import BENCHES, bench
from chimera.bench.bmv2ratio import ladders
from chimera.bench.shards import describe, summarize
from chimera.errors import ConfigError


def test_both_ladders_land_under_their_own_columns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """chimera.p4's ladder (a throughput run's, with conformance columns) and forward.p4's (fewer columns) in one
    CSV that pandas reads back aligned (seen failing with the second appended headerless: lost=3000 and
    reference_mismatches=forward.p4)."""
    chimera = pd.DataFrame({"pps": [1000, 2000], "lost": [0, 5], "reference_mismatches": [0, 0], "sent_pps": [1e3, 2e3]})
    forward = pd.DataFrame({"pps": [1000, 2000], "lost": [0, 0], "sent_pps": [1e3, 2e3]})
    p = tmp_path / "ladder.csv"
    ladders({"chimera.p4": chimera, "forward.p4": forward}).to_csv(p, index=False)
    back = pd.read_csv(p)
    fwd = back[back["path"] == "forward.p4"]
    assert list(fwd["lost"]) == [0, 0] and fwd["reference_mismatches"].isna().all()
    assert list(back[back["path"] == "chimera.p4"]["lost"]) == [0, 5]


def _steps(held: dict[tuple[str, int], list[bool]]) -> pd.DataFrame:
    rows = []
    for (t, k), hs in held.items():
        for i, h in enumerate(hs):
            pps = 1000 * (i + 1)
            rows.append({"target": t, "shards": k, "pps_per_shard": pps, "sent_pps": float(pps * k), "held": h})
    return pd.DataFrame(rows)


def test_a_ladder_that_lost_at_its_lowest_step_is_below_it_not_zero() -> None:
    out = summarize(_steps({("bmv2", 1): [True, True, False], ("bmv2", 2): [False]})).set_index("shards")
    assert out.loc[1, "aggregate_zero_loss_pps"] == 2000.0 and not out.loc[1, "below_lowest_step"]
    assert np.isnan(out.loc[2, "aggregate_zero_loss_pps"]) and out.loc[2, "below_lowest_step"]
    assert np.isnan(out.loc[2, "efficiency"])
    words = [describe(r) for r in out.reset_index().itertuples()]
    assert words[1] == "bmv2 x2: below the lowest step (1000 pps per shard lost frames)"
    assert "0.0 pps" not in " ".join(words)


def test_the_shards_bench_takes_k_and_the_targets_and_no_other_bench_does() -> None:
    opts = BENCHES["shards"].options.model_validate({"shards": (1, 2, 4), "targets": ("ebpf",)})
    assert opts.shards == (1, 2, 4) and opts.targets == ("ebpf",)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="takes no option --shards"):
        bench("zeroloss").run(shards=(2,))


@pytest.mark.parametrize("name", ["fidelity", "directions"])
def test_a_real_set_asked_for_and_absent_stops_the_bench_first(name: str, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The fidelity bench run from a clone without shared/ beside it skipped both real rows with a warning; now
    it names CHIMERA_SHARED_DATASETS before any work, unless --only leaves the real sets out (seen failing with
    the warning)."""
    import dataclasses
    from pathlib import Path

    from chimera.bench import fidelity
    from chimera.errors import DatasetError
    moved = tuple(dataclasses.replace(d, dataset={**d.dataset, "path": str(tmp_path / "nowhere" / d.name)})
                  if d.real else d for d in fidelity.DATA)
    monkeypatch.setattr(fidelity, "DATA", moved)
    monkeypatch.chdir(tmp_path)   # the bench writes under ./results
    with pytest.raises(DatasetError, match="CHIMERA_SHARED_DATASETS"):
        bench(name).run(seeds=(1,))
    assert not any(Path(tmp_path).rglob("manifest.json"))        # refused before a run directory was made
    assert [d.name for d in fidelity.chosen_data(("synthetic",), name)] == [d.name for d in moved if not d.real]


def test_a_rate_is_the_median_of_repeated_ladders_with_its_range() -> None:
    """One ladder on a busy host is one draw (issue 58: 500, 750 or 1,000 pps across runs): the zero-loss and
    BMv2-ratio benches publish the median of repeated ladders and their range; a ladder that lost at its lowest
    step sorts below every rate and is said so, never read as 0 pps."""
    from chimera.bench.ladder import LadderRead, ratio_spread, read_ladder, spread
    from chimera.bench.zeroloss import row
    steps = pd.DataFrame({"pps": [250, 500, 750], "offered_pps": [250.2, 499.7, np.nan], "lost": [0, 0, 3]})
    assert read_ladder(steps, rate="offered_pps") == LadderRead(500, 250, False)
    assert read_ladder(steps.assign(lost=[1, 0, 0])) == LadderRead(750, 250, False)
    reads = [LadderRead(p, 250, False) for p in (None, 500, 750, 1000, 750)]
    s = spread(reads)
    assert (s.median, s.low, s.high, s.below) == (750, None, 1000, 1)
    assert s.words() == "median 750 pps (below 250-1,000 over 5 ladders)"
    assert spread([LadderRead(p, 250, False) for p in (None, None, 500, 750, 1000)]).median == 500  # below sorts low
    low = spread([LadderRead(p, 250, False) for p in (None, None, 500, None, 750)])
    assert low.median is None and low.words() == "below the lowest step (250 pps) in 3 of 5 ladders"
    assert spread([LadderRead(2000, 250, True)] * 3).words() == "median at least 2,000 pps (2,000-2,000 over 3 ladders)"
    r = row("bmv2", reads, 5000)
    assert r.median_pps == 750 and not r.goal_met and " 0 pps" not in f" {r.words}"
    pairs = [(LadderRead(a, 250, False), LadderRead(b, 250, bb)) for a, b, bb in
             ((500, 1000, False), (750, 1000, False), (None, 1000, False), (1000, 2000, False), (250, 1000, False))]
    rs = ratio_spread(pairs)
    assert (rs.median, rs.low, rs.high, rs.undefined) == (0.5, 0.25, 0.75, 1)
    assert rs.words() == "median 0.500 (0.250-0.750 over 4 repeats; undefined in 1)"


def test_a_class_with_too_few_test_flows_gets_no_number() -> None:
    """Issue 53: where a class has fewer than MIN_TEST_FLOWS test flows, its per-class row says "too few flows"
    instead of a precision, recall and F1 (seen failing with every class scored)."""
    from chimera.metrics.classification import MIN_TEST_FLOWS, TOO_FEW, per_class
    y = np.array([0] * 20 + [1] * 6)
    flows = np.r_[np.arange(20), np.repeat(np.arange(100, 100 + MIN_TEST_FLOWS - 1), [3, 1, 1, 1][:MIN_TEST_FLOWS - 1])]
    pred = y.copy()
    pc = per_class(y, pred, ["a", "b"], flows).set_index("class")
    assert pc.loc["a", "test_flows"] == 20 and pc.loc["a", "f1"] == 1.0 and pc.loc["a", "scored"] == ""
    assert pc.loc["b", "test_flows"] == MIN_TEST_FLOWS - 1 and pc.loc["b", "scored"] == TOO_FEW
    assert pc.loc["b", ["precision", "recall", "f1"]].isna().all() and pc.loc["b", "support"] == 6
    assert "test_flows" not in per_class(y, pred, ["a", "b"])     # without flows: as before


def test_a_flow_resample_is_scored_as_the_metric_scores_the_test_set() -> None:
    """Each draw of flow_bootstrap_f1 is the packet-level macro-F1 (over the classes present) of the packets of a
    resample of whole test flows, the same resample for every method (paired), and the same draws on the same
    partition in every run."""
    from chimera.metrics.classification import macro_f1
    from chimera.metrics.intervals import flow_bootstrap_f1
    rng = np.random.default_rng(3)
    flows = np.repeat(np.arange(40), 5)
    y = flows % 4
    preds = {"a": np.where(rng.random(y.size) < 0.8, y, rng.integers(0, 4, y.size)), "b": y.copy()}
    boot = flow_bootstrap_f1(y, preds, flows, draws=5, seed=0)
    assert len(boot) == 10 and (boot[boot["method"] == "b"]["f1"] == 1.0).all()
    again = np.random.default_rng(0)
    for d in range(5):
        w = np.bincount(again.integers(0, 40, 40), minlength=40)
        keep = np.repeat(np.arange(y.size), w[flows])          # each packet as often as its flow was drawn
        want = macro_f1(y[keep], preds["a"][keep])
        got = boot[(boot["draw"] == d) & (boot["method"] == "a")]["f1"].iloc[0]
        assert abs(got - want) < 1e-6, (d, got, want)
    assert flow_bootstrap_f1(y, preds, flows, draws=5, seed=0).equals(boot)
