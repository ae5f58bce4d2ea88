"""Shared by the multi-dataset kinds (accuracy, resources, input_scale, hyper_dim, roc): each named dataset
prepared once, Chimera variants run through the normal stages, baselines on the same split."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sklearn.metrics import roc_auc_score

from chimera.baselines.budget import Tuning
from chimera.baselines.features import fair_inputs, input_bits
from chimera.baselines.zoo import BASELINES, SEQUENCE_BASELINES, BaselineResult, BaselineSettings, run_baseline
from chimera.experiments.config import ExperimentConfig, ResolvedVariant, known
from chimera.experiments.stages.compile import compile_variant, save_artifact
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData, dataset_record, prepare, resolve_dataset
from chimera.experiments.stages.rules import LearnedRules, learn_rules
from chimera.experiments.stages.target import run_variant
from chimera.experiments.stages.train import ModelCache, train_variant, training_columns, tune_variant
from chimera.formats.artifact import Artifact
from chimera.formats.rows import Cells
from chimera.metrics import classification as cm

log = logging.getLogger(__name__)


class BaselinesSpec(BaseModel):
    """The paper's baselines (chimera.baselines.zoo), trained on Chimera's training packets, reading what it
    reads over its window, every method (Chimera too) under the comparison's budget (chimera.baselines.budget)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    methods: list[str] = Field(default_factory=lambda: list(BASELINES), min_length=1)
    window: int | None = Field(None, ge=1, le=64, description="packets per decision of the window models "
                               "(default: Chimera's window)")
    tuning: Tuning = Field("full", description="full: every configuration of each method's grid, chosen on "
                           "validation; first: the first configuration only (a smoke run, labelled as such); wide: every "
                           "configuration of each method's widened search (budget.WIDE), Chimera's included: the "
                           "check on rows whose budgeted choice binds at an edge (experiments/accuracy_wide.yaml)")

    @field_validator("methods")
    @classmethod
    def _known_methods(cls, v: list[str]) -> list[str]:
        known(v, tuple(BASELINES), "baseline")
        return v


class SweepSpec(BaseModel):
    """input_scale (windows) and hyper_dim (m x d_v x quantization bits, against a per-flow budget)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    windows: list[int] = Field([2, 4, 8, 16, 32], min_length=1)
    features: list[int] = Field([4, 8, 16], min_length=1, description="m, random features")
    d_v: list[int] = Field([4, 8, 16], min_length=1)
    bits: list[int] = Field([4, 8], min_length=1, description="b, table value width")
    per_flow_budget_bits: int = Field(8192, ge=1, description="the budget the ratio divides by (1 KB = 8192)")
    sequence_baselines: list[str] = Field(["BoS", "RNN-B", "CNN-M"], description="input_scale: baselines swept")

    @field_validator("windows")
    @classmethod
    def _windows(cls, v: list[int]) -> list[int]:
        bad = [w for w in v if w < 1 or w & (w - 1)]
        if bad:
            raise ValueError(f"windows {bad}: Chimera's ring needs a power of two >= 1")
        return v

    @field_validator("sequence_baselines")
    @classmethod
    def _known_sequence(cls, v: list[str]) -> list[str]:
        known(v, SEQUENCE_BASELINES, "sequence baseline")
        return v



class MultiDatasetExperiment(ExperimentConfig):
    """The kinds that compare methods over several named datasets (``datasets:``)."""

    multi_dataset = True


def baselines_spec(cfg: ExperimentConfig) -> BaselinesSpec:
    spec = getattr(cfg, "baselines", None)
    return spec if isinstance(spec, BaselinesSpec) else BaselinesSpec()


def sweep_spec(cfg: ExperimentConfig) -> SweepSpec:
    spec = getattr(cfg, "sweep", None)
    return spec if isinstance(spec, SweepSpec) else SweepSpec()


@dataclass
class NamedData:
    name: str
    data: PreparedData
    rules: LearnedRules
    cache: ModelCache          # one per dataset: trained models are keyed by config, not by data

    def attack_classes(self, names: list[str] | None = None) -> list[int]:
        wanted = set(names) if names is not None else {"SCAN", "SYN_FLOOD", "UDP_DOS"}
        return [i for i, c in enumerate(self.data.classes) if c in wanted]


def named_data(ctx: RunContext) -> Iterator[NamedData]:
    """Each dataset of the experiment, prepared, checked against the target's limits, with rules learned."""
    for name, spec in ctx.cfg.named_datasets().items():
        with ctx.timed(f"dataset:{name}"):
            data = prepare(resolve_dataset(spec, ctx.data_root), ctx.cfg.seed)
        ctx.check_classes(len(data.classes))
        rec = dataset_record(data)
        ctx.run.manifest.datasets[name] = rec
        if ctx.run.manifest.dataset is None:  # the report header shows the first
            ctx.run.manifest.dataset = rec
        with ctx.timed(f"rules:{name}"):
            rules = learn_rules(ctx.rule_file, data, ctx.cfg.seed, ctx.cfg.rule_precision_floor)
        yield NamedData(name, data, rules, ModelCache())


def per_flow_bits(art: Artifact) -> int:
    """Chimera's per-flow state as the design counts it: the compiled artifact's packed formula (the ring of
    earlier tokens and the accumulators, at their widths, no padding), counted as the window models' "fields
    stored for the window" are, so that a comparison table sets counts beside counts. What a dataplane allocates
    for it (eBPF map value sizes, P4 register arrays: padding included) is the resources experiment's to measure;
    a comparison run, which runs in the reference pipeline, so depends on no dataplane's code."""
    return int(art.resources["per_flow_bits"]["total"])


def run_chimera(ctx: RunContext, nd: NamedData, v: ResolvedVariant, label: str, tuning: Tuning | None = None,
                preds: dict[str, np.ndarray] | None = None) -> Cells:
    """Train, compile and run one Chimera variant on ``nd``; one row with P/R/F1 and measured sizes. With
    ``tuning``: under the comparison's budget (chimera.baselines.budget), as the baselines are."""
    v = v.model_copy(update={"name": label})
    with ctx.timed(f"train:{label}"):
        trained = (train_variant(nd.data, nd.rules, v, ctx.cfg.seed, nd.cache) if tuning is None else
                   tune_variant(nd.data, nd.rules, v, ctx.cfg.seed, nd.cache, tuning))
    v = v.model_copy(update={"model": trained.model.config})  # what was compiled: the configuration kept
    art = None
    if not v.software_only:
        with ctx.timed(f"compile:{label}"):
            art = compile_variant(nd.data, nd.rules, v, trained)
            sha = save_artifact(art, ctx.run.path / "artifacts", label)
    with ctx.timed(f"target:{label}"):
        ex = run_variant(ctx, nd.data, nd.rules, v, trained, art)
    y = nd.data.y(nd.data.test_rows)
    s = cm.summary(y, ex.pred, nd.data.classes)
    row: Cells = {"dataset": nd.name, "method": "Chimera", "where": ex.where,
                           "kind": "switch target" if ex.on_switch else
                           ("software" if art is None else "reference integer"),
                           "task": "classification", "precision": s["macro_precision"], "recall": s["macro_recall"],
                           "f1": s["macro_f1"], "accuracy": s["accuracy"],
                           "input_bits": input_bits(fair_inputs(v.model.window)),
                           "seconds": ex.seconds, **training_columns(trained, v), "beta": trained.beta}
    if art is not None:
        row.update({"model_kbits": art.resources["table_bits"] / 1000, "per_flow_bits": per_flow_bits(art),
                    "per_flow_source": "packed formula (the design's count)",
                    "table_entries": art.resources["table_entries"], "artifact_sha256": sha,
                    **{k: v for k, v in ex.columns().items() if k in ("reference_mismatches", "lost")}})
    log.info("[%s] %s: macro-F1 %.4f on %s", nd.name, label, row["f1"], ex.executed_on)
    if preds is not None:
        preds["Chimera"] = np.asarray(ex.pred)
    return row


def baseline_row(nd: NamedData, r: BaselineResult, task: str) -> Cells:
    y = nd.data.y(nd.data.test_rows)
    att = nd.attack_classes()
    auc: dict[str, float] = {}
    if task != "classification":
        y = np.isin(y, att).astype(np.int64)
        s = cm.summary(y, r.pred, ["benign", "attack"])
        if r.score is not None:
            # the score's own quality, apart from its threshold: near 0.5, the score cannot tell attacks from
            # benign windows whatever the threshold (issue 53: this row once said "everything benign")
            auc["test_auc"] = float(roc_auc_score(y, r.score)) if 0 < y.sum() < len(y) else float("nan")
    else:
        s = cm.summary(y, r.pred, nd.data.classes)
    return {"dataset": nd.name, "method": r.name, "where": r.where,
            "kind": "reference integer" if r.where == "reference integer" else "software",
            "task": task, "precision": s["macro_precision"], "recall": s["macro_recall"], "f1": s["macro_f1"],
            "accuracy": s["accuracy"], "input_bits": r.input_bits, "model_kbits": r.model_bits / 1000,
            "per_flow_bits": r.per_flow_bits, "per_flow_source": "fields stored for the window",
            "seconds": r.seconds, **{k: v for k, v in r.extra.items() if not isinstance(v, dict)}, **auc}


def baseline_settings(ctx: RunContext) -> BaselineSettings:
    b = baselines_spec(ctx.cfg)
    return BaselineSettings.like(ctx.cfg.model, window=b.window or ctx.cfg.model.window, tuning=b.tuning)


def run_baselines(ctx: RunContext, nd: NamedData, methods: list[str], st: BaselineSettings,
                  preds: dict[str, np.ndarray] | None = None) -> list[Cells]:
    """Every method's row on ``nd``; ``preds`` collects the classification methods' test predictions."""
    from chimera.baselines.zoo import BASELINES
    d = nd.data
    rows: list[Cells] = []
    feats: dict[Any, Any] = {}
    att = nd.attack_classes()
    for name in methods:
        if BASELINES[name].task != "classification" and not att:
            log.info("[%s] %s skipped: the dataset has no attack classes to detect", nd.name, name)
            rows.append({"dataset": nd.name, "method": name, "where": BASELINES[name].where, "kind": "software",
                         "task": BASELINES[name].task, "note": "no attack classes in this dataset"})
            continue
        with ctx.timed(f"baseline:{nd.name}:{name}"):
            r = run_baseline(name, d.ds, d.tokens, (d.train_rows, d.val_rows, d.test_rows), len(d.classes), att, st,
                             ctx.cfg.seed, feats)
        rows.append(baseline_row(nd, r, BASELINES[name].task))
        if preds is not None and BASELINES[name].task == "classification":
            preds[name] = np.asarray(r.pred)
        log.info("[%s] %s (%s): macro-F1 %.4f, %d input bits, %.1f Kb, %d bits/flow", nd.name, name, r.where,
                 rows[-1]["f1"], r.input_bits, r.model_bits / 1000, r.per_flow_bits)
    return rows
