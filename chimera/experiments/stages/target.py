"""Stage 5, target: run a compiled variant (or a † float model) over the replayed packets.

A switch target that cannot run an artifact (e.g. incremental aggregation on
eBPF) hands it to the reference target, and the row says so; a † variant runs
on the software classifier host where the target has one, else offline.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from chimera.experiments.config import ResolvedVariant
from chimera.experiments.stages.compile import slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.experiments.stages.train import TrainedVariant
from chimera.formats.artifact import Artifact
from chimera.formats.rows import Cells
from chimera.reference.pipeline import Verdicts
from chimera.targets.base import Capability, Target, TargetResult
from chimera.targets.reference import ReferenceTarget
from chimera.targets.software.classifier import export_model

log = logging.getLogger(__name__)


@dataclass
class Execution:
    """What a target made of one variant: the verdicts of the replayed packets and where they came from."""

    executed_on: str
    pred: np.ndarray                  # int64 per test packet
    result: TargetResult | None       # None: offline float prediction
    fell_back: str | None = None      # why the variant ran on the reference instead of the chosen target
    seconds: float = 0.0
    offline_agreement: float | None = None  # † on the software host: share equal to the offline float model
    on: type[Target] | None = None    # the target whose tables classified (None: a † configuration)

    @property
    def where(self) -> str:
        """How a table labels the row: the target's own label where it ran as asked, else what ran it."""
        return self.on.label if self.on is not None and self.fell_back is None else self.executed_on

    @property
    def on_switch(self) -> bool:
        """The variant's tables ran in a switch on the testbed (not a fallback, not a † configuration)."""
        return self.on is not None and self.fell_back is None and self.on.can(Capability.TESTBED)

    @property
    def verdicts(self) -> Verdicts | None:
        return self.result.verdicts if self.result is not None else None

    def columns(self) -> Cells:
        out = self.result.columns() if self.result is not None else {}
        if self.offline_agreement is not None:
            out["offline_agreement"] = self.offline_agreement
        return out


def run_variant(ctx: RunContext, data: PreparedData, rules: LearnedRules, v: ResolvedVariant,
                trained: TrainedVariant, art: Artifact | None) -> Execution:
    t0 = time.perf_counter()
    target, run_dir = ctx.target, ctx.run.path
    pos = data.test_in_replay
    if art is None:  # a † variant: no switch tables
        if not target.can(Capability.SOFTWARE_HOST):
            return Execution("software classifier (float, offline)", trained.float_pred, None,
                             seconds=time.perf_counter() - t0)
        mj = export_model(trained.model, rules.rules, rules.weights, trained.fusion, trained.beta,
                          run_dir / "artifacts" / f"{slug(v.name)}.software.json")
        res = target.run_software(mj, data.replay_table, run_dir, slug(v.name), replay=ctx.replay)
        pred = res.verdicts.label[pos].astype(np.int64)
        return Execution(f"software classifier host sc (float), {target.name} testbed", pred, res,
                         seconds=time.perf_counter() - t0,
                         offline_agreement=float(np.mean(pred == trained.float_pred)))
    runner: Target = target
    why = target.unsupported(art)
    if why:
        log.warning("[target] %s: %s; evaluated on the reference target instead", v.name, why)
        runner = ReferenceTarget()
    res = runner.run(art, data.replay_table, run_dir, slug(v.name), replay=ctx.replay)
    return Execution(runner.name + (f" ({why})" if why else ""), res.verdicts.label[pos].astype(np.int64), res,
                     fell_back=why, seconds=time.perf_counter() - t0, on=type(runner))
