"""The variants kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging

import pandas as pd
from tqdm import tqdm

from chimera.experiments.kinds.base import Cell
from chimera.experiments.kinds.variants import tables as T
from chimera.experiments.kinds.variants.config import VariantsExperiment, VariantsSection
from chimera.experiments.stages.compile import compile_variant, save_artifact, slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import prepare, record_dataset, resolve_dataset
from chimera.experiments.stages.metrics import VariantResult, row_notes, score_variant
from chimera.experiments.stages.rules import learn_rules
from chimera.experiments.stages.target import run_variant
from chimera.experiments.stages.train import train_variant, training_columns, tune_variant
from chimera.metrics import classification as cm
from chimera.targets.base import Capability
from chimera.targets.registry import TRUTH

log = logging.getLogger(__name__)


METRIC_COLUMNS = ("macro_f1", "macro_precision", "macro_recall", "accuracy", "bits_per_flow", "table_entries",
                  "table_kbits", "float_int_agreement")


def run(ctx: RunContext[VariantsExperiment]) -> None:
    cfg = ctx.cfg
    log.info("[1/7 dataset] %s", cfg.the_dataset().model_dump(exclude_none=True))
    with ctx.timed("dataset"):
        ctx.data = data = prepare(resolve_dataset(cfg.the_dataset(), ctx.data_root), cfg.seed)
        ctx.check_classes(len(data.classes))
    record_dataset(ctx.run.manifest, data)
    with ctx.timed("rules"):
        ctx.rules = rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    log.info("[2/7 rules] %s: %d hard, %d soft rules; soft weights learned (hinge-loss MRF)", rules.rules.path,
             len(rules.rules.hard), len(rules.rules.soft))
    results = []
    for v in tqdm(ctx.variants, desc=f"{cfg.name} variants", unit="variant"):
        log.info("[3/7 train] %s", v.name)
        with ctx.timed(f"train:{v.name}"):
            trained = (train_variant(data, rules, v, cfg.seed, ctx.cache) if cfg.tuning is None else
                       tune_variant(data, rules, v, cfg.seed, ctx.cache, cfg.tuning))
        v = v.model_copy(update={"model": trained.model.config})  # what is compiled: the configuration kept
        art, sha = None, None
        if not v.software_only:
            with ctx.timed(f"compile:{v.name}"):
                art = compile_variant(data, rules, v, trained)
                sha = save_artifact(art, ctx.run.path / "artifacts", v.name)
            log.info("[4/7 compile] %s: %d bits/flow, %d table entries, artifact %s", v.name,
                     art.resources["per_flow_bits"]["total"], art.resources["table_entries"], sha[:12])
        with ctx.timed(f"target:{v.name}"):
            ex = run_variant(ctx, data, rules, v, trained, art)
        log.info("[5/7 target] %s: %s", v.name, ex.executed_on)
        r = score_variant(data, v, trained, art, sha, ex, rules)
        r.row.update(training_columns(trained, v))
        log.info("[6/7 metrics] %s%s: macro-F1 %.4f (P %.4f, R %.4f)", v.name, " †" if v.software_only else "",
                 r.row["macro_f1"], r.row["macro_precision"], r.row["macro_recall"])
        results.append(r)
    log.info("[7/7 outputs] %s", ctx.run.path)
    _record_fallbacks(ctx, results)
    row_notes(results)
    write_tables(ctx, results)


def write_tables(ctx: RunContext, results: list[VariantResult]) -> None:
    """ablation.csv (one row per variant), metrics.csv (long form), per_class.csv, confusion.csv, and per
    packet / per flow tables of the first switch variant."""
    run = ctx.run.path
    ablation = pd.DataFrame([r.row for r in results])
    T.ABLATION.write(ablation, run)
    T.METRICS.write(ablation.melt(id_vars=["variant"], value_vars=[c for c in METRIC_COLUMNS if c in ablation],
                                  var_name="metric"), run)
    T.PER_CLASS.write(pd.concat([r.per_class for r in results], ignore_index=True), run)
    T.CONFUSION.write(pd.concat([r.confusion.assign(variant=r.row["variant"]) for r in results]), run)
    packets = next((r.packets for r in results if r.packets is not None), None)
    if packets is not None:
        T.PACKETS.write(packets, run)
        T.FLOWS.write(cm.flow_level(packets["flow"].to_numpy(), packets["label"].to_numpy(),
                                    packets["pred"].to_numpy()), run)
    ctx.record(VariantsSection(variants=[v.model_dump(mode="json") for v in ctx.variants]))


def _record_fallbacks(ctx: RunContext, results: list[VariantResult]) -> None:
    """Variants that ran elsewhere than the chosen target are named in the manifest; when every variant did,
    the run itself is marked (run id, manifest target) with the reason."""
    where = {r.row["variant"]: r.row["executed_on"] for r in results}
    fallbacks = {r.row["variant"]: r.row["target_fallback"] for r in results if r.row.get("target_fallback")}
    ctx.run.manifest.record(variant_targets=where, variant_fallbacks=fallbacks)
    if fallbacks and len(fallbacks) == len(results) and ctx.target.can(Capability.TESTBED):
        ctx.run.set_target(TRUTH, "every variant fell back: " + "; ".join(sorted(set(fallbacks.values()))))


def cells(cfg: VariantsExperiment) -> list[Cell]:
    return [Cell(slug(v.name), {"variants": [v.model_dump(mode="json")]}, {"variant": v.name}) for v in cfg.variants]
