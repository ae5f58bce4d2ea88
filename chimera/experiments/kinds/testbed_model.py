"""Shared by the testbed measurement kinds (latency, throughput): one model built as every run builds it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chimera.errors import ConfigError
from chimera.experiments.stages.compile import compile_variant, save_artifact
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData, prepare, record_dataset, resolve_dataset
from chimera.experiments.stages.rules import learn_rules
from chimera.experiments.stages.train import train_variant
from chimera.formats.artifact import Artifact
from chimera.targets.base import Capability
from chimera.targets.registry import with_capability
from chimera.targets.software.classifier import export_model


@dataclass
class BuiltModel:
    data: PreparedData
    art: Artifact           # the first variant, compiled (the switch path)
    model_json: Path        # the same model in float, for the software classifier host


def build_model(ctx: RunContext, what: str) -> BuiltModel:
    """Refuse the reference target (nothing to measure), then dataset -> rules -> train -> compile the
    experiment's first variant and export its float model."""
    cfg = ctx.cfg
    if not ctx.target.can(Capability.TESTBED):
        testbeds = ", ".join(f"--target {c.name}" for c in with_capability(Capability.TESTBED))
        raise ConfigError(f"{what}: the {ctx.target.name} target has no testbed, so no {what} to measure",
                          f"run it as root on a testbed target ({testbeds}; `invoke targets` lists them)")
    with ctx.timed("dataset"):
        ctx.data = data = prepare(resolve_dataset(cfg.the_dataset(), ctx.data_root), cfg.seed)
    ctx.check_classes(len(data.classes))
    record_dataset(ctx.run.manifest, data)
    rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    v = ctx.variants[0]
    with ctx.timed("train"):
        trained = train_variant(data, rules, v, cfg.seed, ctx.cache)
    art = compile_variant(data, rules, v, trained)
    save_artifact(art, ctx.run.path / "artifacts", v.name)
    model_json = export_model(trained.model, rules.rules, rules.weights, trained.fusion, trained.beta,
                              ctx.run.path / "artifacts" / "software.json")
    return BuiltModel(data, art, model_json)
