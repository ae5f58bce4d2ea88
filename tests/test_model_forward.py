"""The float model trains on what it is scored on: the torch forward pass over a training batch (whole flows
in shuffled order) equals TrainedModel.scores() on the same tokens, for every attention variant. The dense
variant once trained on scrambled histories (a search in an unsorted batch: issue 21's "Dense attention" row)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chimera.experiments.load import load_experiment
from chimera.experiments.stages.dataset import prepare, resolve_dataset
from chimera.experiments.stages.train import train_model
from chimera.model.train import AttentionClassifier, _batches, _export, _inputs

from builders import ROOT

VARIANTS = [{"attention": "prf", "keys": "hybrid"}, {"attention": "prf", "keys": "dense"},
            {"attention": "softmax", "keys": "hybrid"}, {"attention": "rff", "keys": "hybrid"},
            {"attention": "prf", "keys": "local"}, {"attention": "prf", "keys": "global"}]


@pytest.fixture(scope="module")
def data():  # type: ignore[no-untyped-def]
    cfg = load_experiment("quickstart", {"model": {"epochs": 1}})
    return cfg, prepare(resolve_dataset(cfg.the_dataset(), ROOT / "data"), cfg.seed)


@pytest.mark.parametrize("over", VARIANTS, ids=[f"{v['attention']}-{v['keys']}" for v in VARIANTS])
def test_forward_equals_scores_on_shuffled_batches(data, over) -> None:  # type: ignore[no-untyped-def]
    cfg0, prepared = data
    cfg = cfg0.model.model_copy(update={**over, "epochs": 1, "n_global": 4})
    fitted = train_model(prepared, cfg, seed=3)
    mp, tv, ctx = fitted.model.map, fitted.tokens, fitted.val
    torch.manual_seed(0)
    model = AttentionClassifier(cfg, len(prepared.classes), mp.sizes, seed=5)  # untrained: any weights will do
    exported = _export(model, cfg, prepared.classes, mp, float("nan"), 0)
    want = exported.scores(tv, ctx)
    dense = cfg.keys == "dense"
    batches = _batches(ctx, 300, torch.Generator().manual_seed(1))
    assert len(batches) > 3 and any(np.any(np.diff(b) < 0) for b in batches)  # shuffled: not in position order
    with torch.no_grad():
        for sel in batches:
            got = model(*_inputs(tv, ctx, sel, dense)).numpy()
            np.testing.assert_allclose(got, want[sel], rtol=1e-3, atol=1e-4)  # float32 prefix sums vs float64
