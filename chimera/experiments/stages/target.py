"""Stage 5, target: run a compiled variant (or a † float model) over the replayed packets.

A switch target that cannot run an artifact (e.g. incremental aggregation on
eBPF) hands it to the reference target, and the row says so; a † variant runs
on the software classifier host where the target has one, else offline.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chimera.experiments.config import ResolvedVariant
from chimera.experiments.stages.compile import slug
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.experiments.stages.train import TrainedVariant
from chimera.compile.build import planned_constants
from chimera.errors import ConfigError
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import Verdicts
from chimera.rules.spec import Rules
from chimera.targets.base import Target, exceeded
from chimera.targets.reference import ReferenceTarget
from chimera.targets.software.classifier import export_model

log = logging.getLogger(__name__)


@dataclass
class Execution:
    """What a target made of one variant: the verdicts of the replayed packets and where they came from."""

    executed_on: str
    pred: np.ndarray                  # int64 per test packet
    verdicts: Verdicts | None         # per replayed packet (None: offline float prediction)
    evictions: int | None
    extra: dict[str, Any] = field(default_factory=dict)
    fell_back: str | None = None      # why the variant ran on the reference instead of the chosen target
    seconds: float = 0.0


def run_variant(target: Target, data: PreparedData, rules: LearnedRules, v: ResolvedVariant,
                trained: TrainedVariant, art: Artifact | None, run_dir: Path) -> Execution:
    t0 = time.perf_counter()
    pos = data.test_in_replay
    if art is None:  # a † variant: no switch tables
        run_software = getattr(target, "run_software", None)
        if run_software is None:
            return Execution("software classifier (float, offline)", trained.float_pred, None, None,
                             seconds=time.perf_counter() - t0)
        mj = export_model(trained.model, rules.rules, rules.weights, trained.fusion, trained.beta,
                          run_dir / "artifacts" / f"{slug(v.name)}.software.json")
        res = run_software(mj, data.replay_table, run_dir, slug(v.name))
        pred = res.verdicts.label[pos].astype(np.int64)
        return Execution(f"software classifier host sc (float), {target.name} testbed", pred, res.verdicts, None,
                         {**res.extra, "offline_agreement": float(np.mean(pred == trained.float_pred))},
                         seconds=time.perf_counter() - t0)
    runner, why = target, target.unsupported(art)
    if why:
        log.warning("[target] %s: %s; evaluated on the reference target instead", v.name, why)
        runner = ReferenceTarget()
    res = runner.run(art, data.replay_table, run_dir, slug(v.name))
    return Execution(runner.name + (f" ({why})" if why else ""), res.verdicts.label[pos].astype(np.int64),
                     res.verdicts, res.evictions, res.extra, fell_back=why, seconds=time.perf_counter() - t0)


#: where each checked artifact constant comes from, for the error message
CONSTANT_SOURCE = {"WINDOW": "model.window", "NUM_CENTROIDS": "model.centroids", "RF_FEATURES": "model.features (m)",
                   "D_V": "model.d_v", "LEN_FINE": "model.len_fine", "FLOW_SLOTS": "compile.flow_slots",
                   "SAMPLE_SLOTS": "compile.sample_slots", "SOFT_RULES": "the rule file's soft rules",
                   "HARD_ENTRIES": "the rule file's hard rules (ternary entries after range expansion)",
                   "SOFT_ENTRIES_PER_RULE": "the rule file's largest soft rule (ternary entries)",
                   "NUM_CLASSES": "the dataset's classes"}


def preflight(target: Target, variants: list[ResolvedVariant], rule_file: Rules, n_classes: int | None = None,
              where: str = "") -> None:
    """Fail before any training when a variant would compile past the target's compiled-in limits
    (chimera.p4: 16 classes, window <= 16, <= 64 centroids, 16 soft rules, <= 65536 slots, entry caps)."""
    limits = target.limits()
    if not limits:
        return
    for v in variants:
        if v.software_only:
            continue
        over = exceeded(planned_constants(v.model, v.compile, rule_file, n_classes), limits)
        if over:
            what = "; ".join(f"{CONSTANT_SOURCE.get(k, k)} = {val} exceeds the {target.name} program's maximum "
                             f"{lim} ({k})" for k, val, lim in over)
            raise ConfigError(f"{where or 'experiment'}: variant '{v.name}': {what}",
                              f"lower it in the experiment YAML (or the variant's overrides), or run on a target "
                              f"without this limit (--target reference{'' if target.name == 'ebpf' else ' or ebpf'})")
