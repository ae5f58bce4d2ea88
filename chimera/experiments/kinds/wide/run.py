"""The wide kind's run: the variants kind's stages, with every named variant trained on every rung of the wide
ladder instead of the budget's walk of four."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from tqdm import tqdm

from chimera.baselines.budget import Search, kept_index
from chimera.experiments.config import ResolvedVariant
from chimera.experiments.kinds.base import Cell
from chimera.experiments.kinds.variants.run import _record_fallbacks, write_tables
from chimera.experiments.kinds.wide.config import WideExperiment, WideSpec
from chimera.experiments.stages.compile import compile_variant, save_artifact, slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData, prepare, record_dataset, resolve_dataset
from chimera.experiments.stages.metrics import row_notes, score_variant
from chimera.experiments.stages.rules import LearnedRules, learn_rules
from chimera.experiments.stages.target import run_variant
from chimera.experiments.stages.train import (ModelCache, TrainedVariant, _train_fused, budget_model,
                                              training_columns)

log = logging.getLogger(__name__)


def search(spec: WideSpec) -> Search:
    """Every rung of the wide ladder at the budget's batch size, as a grid (in ladder order: ties go low)."""
    return Search(("lr", "batch_size"), tuple((lr, spec.batch_size) for lr in spec.rates()), trained_in_epochs=True)


def tune_wide(data: PreparedData, rules: LearnedRules, v: ResolvedVariant, seed: int, cache: ModelCache,
              spec: WideSpec) -> TrainedVariant:
    """The variant as ``stages.train.tune_variant`` trains it (the budget's patience, guard cap and class weights,
    the fusion's configured β, no neural-only fallback), over the wide grid instead of the budget's walk.
    Written beside it, not through it: a change to that function would stale every tuned run."""
    fixed = v.model_copy(update={"fusion": v.fusion.model_copy(update={"tune_beta": False})})

    def one(config: dict[str, Any]) -> TrainedVariant:  # library boundary: a configuration's keyword arguments
        model = budget_model(v.model, config).model_copy(update={"window_choices": ()})
        return _train_fused(data, rules, fixed.model_copy(update={"model": model}), model, seed, cache,
                            fallback=False)
    tried = [(Search.label(c), t) for c, t in tqdm(search(spec).run(one, lambda t: t.val_f1), leave=False)]
    label, best = tried[kept_index([t.val_f1 for _, t in tried])]   # the budget's rule, on the wide grid
    log.info("%s: %s chosen on validation over %d rungs (macro-F1 %s)", v.name, label, len(tried),
             "; ".join(f"{k}: {t.val_f1:.4f}" for k, t in tried))
    return dataclasses.replace(best, validation={k: t.val_f1 for k, t in tried}, chosen=label,
                               cap_reached_in=sum(t.model.stopped_by == "cap" for _, t in tried),
                               scorings=sum(t.scorings for _, t in tried))


def run(ctx: RunContext[WideExperiment]) -> None:
    cfg = ctx.cfg
    log.info("[1/6 dataset] %s", cfg.the_dataset().model_dump(exclude_none=True))
    with ctx.timed("dataset"):
        ctx.data = data = prepare(resolve_dataset(cfg.the_dataset(), ctx.data_root), cfg.seed)
        ctx.check_classes(len(data.classes))
    record_dataset(ctx.run.manifest, data)
    with ctx.timed("rules"):
        ctx.rules = rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    results = []
    rates = cfg.wide.rates()
    for v in tqdm(ctx.variants, desc=f"{cfg.name} variants", unit="variant"):
        log.info("[2/6 train] %s on %d rungs, %g to %g", v.name, len(rates), rates[0], rates[-1])
        with ctx.timed(f"train:{v.name}"):
            trained = tune_wide(data, rules, v, cfg.seed, ctx.cache, cfg.wide)
        v = v.model_copy(update={"model": trained.model.config})
        art, sha = None, None
        if not v.software_only:
            with ctx.timed(f"compile:{v.name}"):
                art = compile_variant(data, rules, v, trained)
                sha = save_artifact(art, ctx.run.path / "artifacts", v.name)
            log.info("[3/6 compile] %s: artifact %s", v.name, sha[:12])
        with ctx.timed(f"target:{v.name}"):
            ex = run_variant(ctx, data, rules, v, trained, art)
        log.info("[4/6 target] %s: %s", v.name, ex.executed_on)
        r = score_variant(data, v, trained, art, sha, ex, rules)
        r.row.update(training_columns(trained, v))
        log.info("[5/6 metrics] %s: macro-F1 %.4f with %s", v.name, r.row["macro_f1"], trained.chosen)
        results.append(r)
    log.info("[6/6 outputs] %s", ctx.run.path)
    _record_fallbacks(ctx, results)
    row_notes(results)
    write_tables(ctx, results)


def cells(cfg: WideExperiment) -> list[Cell]:
    return [Cell(slug(v.name), {"variants": [v.model_dump(mode="json")]}, {"variant": v.name}) for v in cfg.variants]
