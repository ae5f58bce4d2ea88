"""The two named directions (chimera.bench.directions): the rule that keeps or drops one reads validation on
the development seeds only; the recency term's offline scores are the scores it was trained and chosen by; the
class-aware Map is a Map like any other (a key -> centroid table) that no implementation needs to learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from chimera.bench import directions as D
from chimera.errors import ConfigError

from builders import quickstart_artifact


def _table(gain: dict[str, list[float]], held_out_gain: float) -> pd.DataFrame:
    rows = []
    for k, data in enumerate(("a", "b", "c", "d", "e")):
        for seed in (*D.DEV_SEEDS, *D.HELD_OUT_SEEDS):
            dev = seed in D.DEV_SEEDS
            base = 0.8 + 0.01 * k
            for arm in D.ARMS:
                g = 0.0 if arm == "base" else (gain[arm][k] if dev else held_out_gain)
                rows.append({"data": data, "seed": seed, "seed_set": D.seed_set(seed), "arm": arm,
                             "val_f1": base + g, "test_f1": base + (0.0 if dev else g)})
    return pd.DataFrame(rows)


def test_the_decision_reads_validation_on_development_seeds_only() -> None:
    t = _table({"recency": [0.01, 0.01, 0.01, -0.001, 0.0], "class-aware Map": [0.02, 0.02, 0.02, 0.02, -0.01]},
               held_out_gain=-0.5)
    d = D.decide(t)
    assert d["recency"].kept and d["recency"].kinds_up == 3      # a majority up, none below the tolerance
    assert not d["class-aware Map"].kept                             # one kind loses 0.01 > 0.005
    # the held-out seeds (here a 0.5 loss on validation) do not enter the decision
    t2 = t.copy()
    t2.loc[t2.seed_set == "held-out", "val_f1"] = 0.0
    assert D.decide(t2) == d


def test_the_recency_term_is_scored_offline_as_it_was_trained() -> None:
    """Neural-only fusion: the validation macro-F1 of the offline (numpy) scores equals the one the training
    loop computed in torch, so the decay is applied alike in both."""
    from builders import quickstart_trained
    from chimera.experiments.stages.train import Directions, ModelCache, train_variant
    data, rules, v, _ = quickstart_trained()
    v = v.model_copy(update={"fusion": v.fusion.model_copy(update={"mode": "neural", "tune_beta": False})})
    t = train_variant(data, rules, v, 0, ModelCache(), Directions(recency=True))
    assert t.model.decay is not None and t.model.decay[0] == 1.0 and 0 < t.model.decay[-1] < 1
    assert t.val_f1 == pytest.approx(t.model.val_f1, abs=1e-12)


def test_a_recency_model_is_never_compiled_or_served() -> None:
    """No dataplane and not the software host implement the recency term: both refuse it, naming it."""
    import dataclasses
    from pathlib import Path

    from chimera.compile.build import quantize
    from chimera.compile.config import CompileConfig
    from chimera.rules.spec import load_rules
    from chimera.targets.software.classifier import export_model

    from builders import ROOT
    qs = quickstart_artifact()
    m = dataclasses.replace(qs.trained.model, decay=np.ones(qs.trained.model.config.window))
    rules = load_rules(ROOT / "rules" / "default.yaml")
    with pytest.raises(ConfigError, match="recency term"):
        export_model(m, rules, np.zeros((0, 1)), qs.variant.fusion, 0.0, Path("/nonexistent"))
    with pytest.raises(ConfigError, match="recency term"):
        quantize(m, rules, np.zeros((0, 1)), CompileConfig(), qs.variant.fusion, 0.0)


def test_the_class_aware_map_is_a_map() -> None:
    """Same tables as any Map (every implementation reads it unchanged); at weight 0 it is the usual Map; with
    the classes it is a different partition that is purer in class on the training tokens."""
    from chimera.model.tokenizer import class_profile, fit_map
    d = quickstart_artifact().data
    tr = d.train_rows
    t = d.ds.table
    sub = type(d.tokens)(*(getattr(d.tokens, f)[tr] for f in ("ip_len", "iat_bucket", "direction", "tcp_flags",
                                                              "proto")))
    y = d.y(tr)
    plain = fit_map(sub, 16, 1, sport=t.sport[tr], dport=t.dport[tr])
    zero = fit_map(sub, 16, 1, sport=t.sport[tr], dport=t.dport[tr], labels=y, class_weight=0.0)
    aware = fit_map(sub, 16, 1, sport=t.sport[tr], dport=t.dport[tr], labels=y, class_weight=1.0)
    assert np.array_equal(plain.centroid_of_key, zero.centroid_of_key)
    assert aware.centroid_of_key.shape == plain.centroid_of_key.shape and aware.centroid_of_key.max() < 16
    assert not np.array_equal(plain.centroid_of_key, aware.centroid_of_key)

    def purity(m) -> float:  # type: ignore[no-untyped-def]
        c = m.centroid_of_key[m.keys(sub)]
        return float(sum(np.bincount(y[c == k]).max() for k in np.unique(c)) / y.size)
    assert purity(aware) > purity(plain)
    assert class_profile(plain.keys(sub), y, int(y.max()) + 1).sum(1) == pytest.approx(1.0)
