"""compile.build.prove_bounds, on its own: the bounds it proves hold on traffic, and a width they exceed is refused
naming the accumulator (the project's main safety claim: no accumulator of any target can overflow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from chimera.compile.build import INT32, Bound, prove_bounds, quantize
from chimera.errors import BudgetError
from chimera.reference.pipeline import SwitchState, run_reference

from builders import quickstart_artifact, quickstart_trained


@pytest.fixture(scope="module")
def built():  # type: ignore[no-untyped-def]
    data, rules, v, trained = quickstart_trained()
    q = quantize(trained.model, rules.rules, rules.weights, v.compile, trained.fusion, trained.beta)
    return data, v, q


def test_the_proved_bounds_hold_on_traffic(built) -> None:  # type: ignore[no-untyped-def]
    data, v, q = built
    bounds = {b.name: b for b in prove_bounds(q, v.model.window, v.compile.ema_frac)}
    art = quickstart_artifact().art
    assert set(art.resources["bounds"]) == set(bounds)  # the artifact records what was proved
    verdicts, st = run_reference(art, data.replay_table)
    assert np.abs(verdicts.fused).max() <= bounds["fused score (int64)"].value
    assert np.abs(st.s_acc).max() <= bounds["incremental accumulator S_t (int32)"].value
    assert np.abs(st.z_acc).max() <= bounds["incremental normaliser Z_t (int32)"].value
    # and they are not vacuous: the observed accumulators reach a real share of the proven bound
    assert np.abs(st.z_acc).max() >= bounds["incremental normaliser Z_t (int32)"].value / 64


def test_an_accumulator_over_its_width_is_refused_by_name(built) -> None:  # type: ignore[no-untyped-def]
    _, v, q = built
    wide = dataclasses.replace(q, phi_k=q.phi_k * 2000)  # S_t past 2^31, every int64 still in range
    with pytest.raises(BudgetError, match=r"S_t \(int32\)"):
        prove_bounds(wide, v.model.window, v.compile.ema_frac)
    ok = prove_bounds(q, v.model.window, v.compile.ema_frac)
    s = next(b for b in ok if b.name.startswith("incremental accumulator S_t"))
    assert s.holds and s.limit == INT32
    assert s.value == v.model.window * int(q.phi_k.max()) * q.token_vmax  # L tokens of phi_k * |v(tok)|


def test_bound_records_say_whether_they_hold() -> None:
    assert Bound("x", 5, 5).holds and not Bound("x", 6, 5).holds


def test_an_artifact_records_its_rules_file_relative_to_the_checkout() -> None:
    """Two checkouts of one commit build the same artifact, sha256 included: it once kept its rules file's absolute
    path, so two hyper_dim runs made in two clones differed in all 36 artifact hashes while all 36 F1s agreed."""
    from pathlib import Path

    from chimera.paths import ROOT, portable
    rules_file = quickstart_artifact().art.provenance["rules_file"]
    assert not Path(rules_file).is_absolute() and (ROOT / rules_file).is_file(), rules_file
    assert portable(ROOT / "rules" / ".." / "rules" / "default.yaml") == "rules/default.yaml"
    assert portable("/elsewhere/rules.yaml") == "/elsewhere/rules.yaml"
