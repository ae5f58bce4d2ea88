"""Stage 4, compile: quantize a trained variant into the table artifact (budgets checked) and save it.

``build_artifact`` is the public "train and compile one variant of an
experiment" API (stages 1-4 in one call): ``invoke topo``, ``build``,
``p4info`` and the benches use it, and it gives exactly the artifact a run of
the experiment compiles.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chimera.compile.build import compile_model
from chimera.compile.header import write_header
from chimera.experiments.config import ResolvedVariant, load_experiment, resolve_variants
from chimera.experiments.stages.dataset import PreparedData, prepare, resolve_dataset
from chimera.experiments.stages.rules import LearnedRules, load_and_learn
from chimera.experiments.stages.train import ModelCache, TrainedVariant, train_variant
from chimera.formats.artifact import Artifact

log = logging.getLogger(__name__)


def slug(name: str) -> str:
    """A variant name as a file name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def compile_variant(data: PreparedData, rules: LearnedRules, v: ResolvedVariant, trained: TrainedVariant) -> Artifact:
    return compile_model(trained.model, rules.rules, rules.weights, v.compile, trained.fusion, trained.beta,
                         provenance={"dataset_sha256": data.ds.manifest.get("packets_sha256"), "variant": v.name})


def save_artifact(art: Artifact, out_dir: Path, name: str) -> str:
    """``<slug>.json`` and its constants header ``<slug>.h`` under ``out_dir``; returns the artifact hash."""
    sha = art.save(out_dir / f"{slug(name)}.json")
    write_header(art, out_dir / f"{slug(name)}.h")
    return sha


@dataclass
class BuiltArtifact:
    art: Artifact
    data: PreparedData
    variant: ResolvedVariant
    trained: TrainedVariant


def build_artifact(experiment: str = "quickstart", variant: int = 0, data_root: Path = Path("data"),
                   overrides: dict[str, Any] | None = None) -> BuiltArtifact:
    """Train and compile variant ``variant`` of ``experiment`` (with config ``overrides``), as a run would."""
    cfg = load_experiment(experiment, overrides)
    v = resolve_variants(cfg, experiment)[variant]
    data = prepare(resolve_dataset(cfg.dataset, data_root), cfg.seed)
    rules = load_and_learn(cfg.rules, data, cfg.seed, cfg.rule_precision_floor)
    trained = train_variant(data, rules, v, cfg.seed, ModelCache())
    return BuiltArtifact(compile_variant(data, rules, v, trained), data, v, trained)
