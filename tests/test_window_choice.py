"""model.window_choices: one model per window, the best validation macro-F1 compiled (ties: the smaller window),
within the configured window (the per-flow state budget)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from chimera.experiments.stages import train as T
from chimera.model.config import ModelConfig


def test_choices_must_be_powers_of_two_within_the_window() -> None:
    assert ModelConfig(window=8, window_choices=(1, 8)).window_choices == (1, 8)
    for bad in ((16,), (3,), (0,)):
        with pytest.raises(ValidationError, match="window_choices"):
            ModelConfig(window=8, window_choices=bad)


@pytest.mark.parametrize(("scores", "chosen"), [({1: 0.9, 8: 0.95}, 8), ({1: 0.97, 8: 0.95}, 1),
                                                ({1: 0.95, 8: 0.95}, 1)])
def test_the_best_validation_window_is_kept(monkeypatch: pytest.MonkeyPatch, scores: dict[int, float],
                                            chosen: int) -> None:
    trained: list[int] = []

    def fake(data, rules, v, model_cfg, seed, cache, *directions):  # type: ignore[no-untyped-def]
        trained.append(model_cfg.window)
        assert model_cfg.window_choices == ()
        fitted = SimpleNamespace(model=SimpleNamespace(config=model_cfg))
        return T.TrainedVariant(fitted, 0.0, None, None, None, scores[model_cfg.window])  # type: ignore[arg-type]

    monkeypatch.setattr(T, "_train_fused", fake)
    v = SimpleNamespace(name="Chimera", model=ModelConfig(window=8, window_choices=(8, 1)))
    tv = T.train_variant(None, None, v, 1, T.ModelCache())  # type: ignore[arg-type]
    assert sorted(trained) == [1, 8] and tv.model.config.window == chosen
    assert tv.window_val_f1 == scores


def test_without_choices_the_window_is_trained_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    monkeypatch.setattr(T, "_train_fused", lambda data, rules, v, cfg, seed, cache, *_: seen.append(cfg.window) or
                        T.TrainedVariant(None, 0.0, None, None, None, 0.5))  # type: ignore[arg-type]
    T.train_variant(None, None, SimpleNamespace(name="x", model=ModelConfig(window=4)), 1,  # type: ignore[arg-type]
                    T.ModelCache())
    assert seen == [4]
