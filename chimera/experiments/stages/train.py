"""Stage 3, train: the Partition/Map tables and the attention model of a variant, then beta on validation.

Models are cached within a run by what they depend on: variants that differ
only in fusion or aggregation share one trained float model.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chimera.baselines.budget import (CLASS_WEIGHT, EPOCH_CAP, PATIENCE, Search, Tuning, kept_index, search_of,
                                      tuning_columns)
from chimera.data.flows import sample_whole_flows
from chimera.data.tokens import Tokens
from chimera.experiments.config import ResolvedVariant
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.formats.rows import Cells
from chimera.metrics.classification import macro_f1
from chimera.model.config import FusionConfig, ModelConfig
from chimera.model.fusion import float_fused
from chimera.model.tokenizer import MapTables, fit_map
from chimera.model.train import Contexts, TokenView, TrainedModel, build_contexts, token_view, train

log = logging.getLogger(__name__)
TOKEN_FIELDS = ("ip_len", "iat_bucket", "direction", "tcp_flags", "proto")


@dataclass(frozen=True)
class Directions:
    """The two directions docs/fidelity.md named, measured offline by ``invoke bench --what directions``
    (chimera.bench.directions) and off everywhere else: a recency term in attention, and a class-aware Map
    (``map_class_weight`` > 0: the keys' class distributions join the k-means features)."""

    recency: bool = False
    map_class_weight: float = 0.0


@dataclass
class ModelCache:
    maps: dict[tuple, tuple[MapTables, TokenView]] = field(default_factory=dict)
    contexts: dict[tuple[int, str], Contexts] = field(default_factory=dict)
    models: dict[str, TrainedModel] = field(default_factory=dict)


@dataclass
class FittedModel:
    """A float model with its token view and contexts; ``scores`` returns s_nn in the data's row order."""

    model: TrainedModel
    tokens: TokenView
    val: Contexts
    test: Contexts

    def scores(self, split: str) -> np.ndarray:
        ctx = self.val if split == "val" else self.test
        return self.model.scores(self.tokens, ctx)[ctx.order]


@dataclass
class TrainedVariant:
    """A variant's float model, the fusion it compiles with (beta picked on validation), and its float test
    prediction (in test-row order). ``fusion`` is the variant's, or neural-only where the cascade scored
    below neural-only on validation (``fallback`` says so)."""

    fitted: FittedModel
    beta: float
    float_pred: np.ndarray
    fusion: FusionConfig
    fallback: str | None = None
    val_f1: float = float("nan")     # validation macro-F1 of the fused float prediction (what selects)
    window_val_f1: dict[int, float] = field(default_factory=dict)  # per window tried (window_choices)
    validation: dict[str, float] = field(default_factory=dict)     # per budget configuration tried (tune_variant)
    chosen: str = ""                                                 # the configuration kept (tune_variant)
    cap_reached_in: int = 0                                          # configurations whose training hit the cap
    scorings: int = 0                                                # validation scores its choices read

    @property
    def model(self) -> TrainedModel:
        return self.fitted.model


def _sub(tok: Tokens, rows: np.ndarray) -> Tokens:
    return Tokens(*(getattr(tok, f)[rows] for f in TOKEN_FIELDS))


def train_sample(data: PreparedData, max_packets: int, seed: int) -> np.ndarray:
    """The training rows: all, or whole training flows drawn with ``seed`` until ``max_packets`` are reached
    (chimera.data.flows.sample_whole_flows: the baselines draw the same sample)."""
    rows = sample_whole_flows(data.train_rows, data.ds.flows.flow_id, max_packets, seed)
    if rows.size < data.train_rows.size:
        log.info("training on %d of %d training packets, whole flows (max_train_packets=%d)", rows.size,
                 data.train_rows.size, max_packets)
    return rows


def _contexts(data: PreparedData, cache: ModelCache, window: int, which: str, rows: np.ndarray) -> Contexts:
    key = (window, which)
    if key not in cache.contexts:
        cache.contexts[key] = build_contexts(data.ds.flows, rows, window)
    return cache.contexts[key]


def train_model(data: PreparedData, cfg: ModelConfig, seed: int, cache: ModelCache | None = None,
                directions: Directions = Directions()) -> FittedModel:
    """The float model for ``cfg`` with its contexts; cached by what it depends on."""
    cache = cache if cache is not None else ModelCache()
    tr = train_sample(data, cfg.max_train_packets, seed)
    mk = (cfg.centroids, cfg.len_fine, seed, cfg.max_train_packets, directions.map_class_weight)
    if mk not in cache.maps:
        t = data.ds.table
        mp = fit_map(_sub(data.tokens, tr), cfg.centroids, seed, len_fine=cfg.len_fine, sport=t.sport[tr],
                     dport=t.dport[tr], labels=data.y(tr) if directions.map_class_weight else None,
                     class_weight=directions.map_class_weight)
        cache.maps[mk] = (mp, token_view(t, data.tokens, data.ds.flows, mp))
    mp, tv = cache.maps[mk]
    ctr = _contexts(data, cache, cfg.window, f"train:{cfg.max_train_packets}", tr)
    cva = _contexts(data, cache, cfg.window, "val", data.val_rows)
    cte = _contexts(data, cache, cfg.window, "test", data.test_rows)
    k = cfg.model_dump_json(exclude={"aggregation"}) + repr(directions)  # batch and incremental share one model
    if k not in cache.models:
        cache.models[k] = train(cfg, data.classes, mp, tv, ctr, data.y(ctr.rows), cva, data.y(cva.rows), seed,
                                directions.recency)
    m = cache.models[k]
    if m.config != cfg:
        m = dataclasses.replace(m, config=cfg)
    return FittedModel(m, tv, cva, cte)


def train_variant(data: PreparedData, rules: LearnedRules, v: ResolvedVariant, seed: int,
                  cache: ModelCache, directions: Directions = Directions()) -> TrainedVariant:
    """Train the variant's model and pick beta on the validation split (float fusion); with
    ``model.window_choices``, one model per window and the one with the best validation macro-F1 (ties: the
    smaller window), as the yardsticks' depth is chosen on validation.

    The cascade never compiles to something that scores below neural-only on validation:
    where every beta does, the variant falls back to neural-only fusion, and says so.
    """
    choices = sorted(set(v.model.window_choices)) or [v.model.window]
    tried = {w: _train_fused(data, rules, v, v.model.model_copy(update={"window": w, "window_choices": ()}), seed,
                             cache, directions) for w in choices}
    best = max(tried, key=lambda w: (tried[w].val_f1, -w))
    if len(tried) > 1:
        log.info("%s: window %d chosen on validation (macro-F1 %s)", v.name, best,
                 ", ".join(f"window {w}: {t.val_f1:.4f}" for w, t in tried.items()))
    return dataclasses.replace(tried[best], window_val_f1={w: t.val_f1 for w, t in tried.items()})


# dict[str, Any]: library boundary: a tuning configuration's keyword arguments
def budget_model(model: ModelConfig, config: dict[str, Any]) -> ModelConfig:
    """``model`` with one configuration of Chimera's grid and the budget's training rules: its patience, its
    guard cap and balanced class weights (Chimera's class_weight_power 1 is inverse frequency)."""
    assert CLASS_WEIGHT == "balanced"
    return model.model_copy(update={**config, "epochs": EPOCH_CAP, "patience": PATIENCE, "class_weight_power": 1.0})


def tune_variant(data: PreparedData, rules: LearnedRules, v: ResolvedVariant, seed: int, cache: ModelCache,
                 tuning: Tuning = "full") -> TrainedVariant:
    """The variant under the comparison's budget (chimera.baselines.budget), as every baseline is tuned: each
    configuration of Chimera's grid trained with balanced class weights, the budget's patience and guard cap, at
    the fusion's configured β and window (choosing either on validation, or falling back to neural-only, would be
    validation scorings outside the budget); kept by the budget's rule (``kept_index``: the first within its tie band
    of the best validation macro-F1)."""
    fixed = v.model_copy(update={"fusion": v.fusion.model_copy(update={"tune_beta": False})})

    def one(config: dict[str, Any]) -> TrainedVariant:  # library boundary: a tuning configuration's keyword arguments
        model = budget_model(v.model, config).model_copy(update={"window_choices": ()})
        return _train_fused(data, rules, fixed.model_copy(update={"model": model}), model, seed, cache,
                            fallback=False)
    search, how = search_of("Chimera", tuning)
    tried = [(Search.label(c), t) for c, t in search.run(one, lambda t: t.val_f1, how)]
    label, best = tried[kept_index([t.val_f1 for _, t in tried])]
    log.info("%s: %s chosen on validation (macro-F1 %s)", v.name, label,
             "; ".join(f"{k}: {t.val_f1:.4f}" for k, t in tried))
    return dataclasses.replace(best, validation={k: t.val_f1 for k, t in tried}, chosen=label,
                               cap_reached_in=sum(t.model.stopped_by == "cap" for _, t in tried),
                               scorings=sum(t.scorings for _, t in tried))


def _train_fused(data: PreparedData, rules: LearnedRules, v: ResolvedVariant, model_cfg: ModelConfig, seed: int,
                 cache: ModelCache, directions: Directions = Directions(), fallback: bool = True) -> TrainedVariant:
    """Train one model and fuse it: β from the fusion's grid on validation where it tunes β, and (``fallback``)
    neural-only where every β scores below it. ``scorings`` counts the validation scores read."""
    fm = train_model(data, model_cfg, seed, cache, directions)
    fusion, beta, why = v.fusion, v.fusion.beta, None
    scorings = 1
    if v.fusion.mode in ("cascade", "soft") and (v.fusion.tune_beta or fallback):
        y_val, s_val = data.y(data.val_rows), fm.scores("val")
        grid = v.fusion.beta_grid if v.fusion.tune_beta else (v.fusion.beta,)
        f1s = {b: macro_f1(y_val, float_fused(s_val, rules.fires["val"], rules.weights, rules.hard["val"], v.fusion,
                                              b)) for b in grid}
        beta = max(f1s, key=lambda b: (f1s[b], -b))
        scorings = len(f1s)
        neural = FusionConfig(mode="neural", tune_beta=False, gamma=v.fusion.gamma)
        if fallback:
            scorings += 1
            nn_f1 = macro_f1(y_val, float_fused(s_val, rules.fires["val"], rules.weights, rules.hard["val"], neural,
                                                0.0))
            if f1s[beta] < nn_f1:
                why = (f"neural-only: the {v.fusion.mode} fusion scored {f1s[beta]:.4f} < {nn_f1:.4f} macro-F1 "
                       "on validation")
                log.warning("%s: %s", v.name, why)
                fusion, beta = neural, 0.0
    val_f1 = macro_f1(data.y(data.val_rows), float_fused(fm.scores("val"), rules.fires["val"], rules.weights,
                                                         rules.hard["val"], fusion, beta))
    pred = float_fused(fm.scores("test"), rules.fires["test"], rules.weights, rules.hard["test"], fusion, beta)
    return TrainedVariant(fm, beta, pred, fusion, why, val_f1, scorings=scorings)


def training_columns(trained: TrainedVariant, v: ResolvedVariant) -> Cells:
    """How a variant's model was trained and chosen: its epochs and why it stopped (``cap``: the guard bound),
    and under the budget every configuration's validation score, the one kept and whether it sits at the grid's
    edge (the columns of formats.tables.TRAINING_COLUMNS)."""
    m = trained.model
    row: Cells = {"epochs_run": m.epochs_run, "stopped_by": m.stopped_by, "epoch_cap": v.model.epochs}
    if trained.validation:
        row.update({**tuning_columns(trained.chosen, trained.validation, trained.scorings),
                    "cap_reached_in": trained.cap_reached_in})
    return row
