"""Stage 3, train: the Map stage and the attention model of a variant, then beta on validation.

Models are cached within a run by what they depend on: variants that differ
only in fusion or aggregation share one trained float model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from chimera.data.tokens import Tokens
from chimera.experiments.config import ResolvedVariant
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.metrics.classification import macro_f1
from chimera.model.config import ModelConfig
from chimera.model.fusion import float_fused
from chimera.model.tokenizer import MapTables, fit_map
from chimera.model.train import Contexts, TrainedModel, build_contexts, train

TOKEN_FIELDS = ("ip_len", "iat_bucket", "direction", "tcp_flags", "proto")


@dataclass
class ModelCache:
    maps: dict[tuple[int, int], MapTables] = field(default_factory=dict)
    models: dict[str, TrainedModel] = field(default_factory=dict)
    contexts: dict[tuple[str, str], Contexts] = field(default_factory=dict)


@dataclass
class TrainedVariant:
    """A variant's float model, its contexts on validation and test, beta, and its float test prediction."""

    model: TrainedModel
    val: Contexts
    test: Contexts
    beta: float
    float_pred: np.ndarray


def _sub(tok: Tokens, rows: np.ndarray) -> Tokens:
    return Tokens(*(getattr(tok, f)[rows] for f in TOKEN_FIELDS))


def _ctx(data: PreparedData, cache: ModelCache, mp: MapTables, cfg: ModelConfig, which: str,
         rows: np.ndarray) -> Contexts:
    key = (cfg.model_dump_json(include={"centroids", "window", "keys"}), which)
    if key not in cache.contexts:
        cache.contexts[key] = build_contexts(data.tokens, data.ds.flows, mp, cfg, rows)
    return cache.contexts[key]


def train_model(data: PreparedData, cfg: ModelConfig, seed: int,
                cache: ModelCache | None = None) -> tuple[TrainedModel, Contexts, Contexts]:
    """(float model, validation contexts, test contexts) for ``cfg``; cached by what the model depends on."""
    cache = cache if cache is not None else ModelCache()
    mk = (cfg.centroids, seed)
    if mk not in cache.maps:
        cache.maps[mk] = fit_map(_sub(data.tokens, data.train_rows), cfg.centroids, seed)
    mp = cache.maps[mk]
    ctr = _ctx(data, cache, mp, cfg, "train", data.train_rows)
    cva = _ctx(data, cache, mp, cfg, "val", data.val_rows)
    cte = _ctx(data, cache, mp, cfg, "test", data.test_rows)
    k = cfg.model_dump_json(exclude={"aggregation"})  # batch and incremental share the float model
    if k not in cache.models:
        cache.models[k] = train(cfg, data.classes, mp, ctr, data.y(data.train_rows), cva, data.y(data.val_rows), seed)
    m = cache.models[k]
    if m.config != cfg:
        m = dataclasses.replace(m, config=cfg)
    return m, cva, cte


def train_variant(data: PreparedData, rules: LearnedRules, v: ResolvedVariant, seed: int,
                  cache: ModelCache) -> TrainedVariant:
    """Train the variant's model and pick beta on the validation split (float fusion)."""
    model, cva, cte = train_model(data, v.model, seed, cache)
    beta = v.fusion.beta
    if v.fusion.tune_beta and v.fusion.mode in ("cascade", "soft"):
        f1s = {b: macro_f1(data.y(data.val_rows), float_fused(model, cva, rules.fires["val"], rules.weights,
                                                               rules.hard["val"], v.fusion, b))
               for b in v.fusion.beta_grid}
        beta = max(f1s, key=lambda b: (f1s[b], -b))
    pred = float_fused(model, cte, rules.fires["test"], rules.weights, rules.hard["test"], v.fusion, beta)
    return TrainedVariant(model, cva, cte, beta, pred)
