"""Stage 4, compile: quantize a trained variant into the table artifact (budgets checked) and save it.
(``chimera.experiments.load.build_artifact`` runs stages 1-4 for one variant of an experiment.)"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from chimera.compile.build import compile_model
from chimera.compile.header import write_header
from chimera.experiments.config import ResolvedVariant
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.experiments.stages.train import TrainedVariant
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
