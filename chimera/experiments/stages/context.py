"""The run context: what the stages of one experiment run share, typed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from chimera.experiments.config import ExperimentConfig, ResolvedVariant
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.experiments.stages.preflight import preflight
from chimera.experiments.stages.train import ModelCache
from chimera.formats.rundir import RunDir
from chimera.rules.spec import Rules
from chimera.targets.base import Target
from chimera.testbed.replay import ReplayConfig


@dataclass
class RunContext:
    cfg: ExperimentConfig
    variants: list[ResolvedVariant]
    target: Target
    run: RunDir
    data_root: Path
    rule_file: Rules
    replay: ReplayConfig                    # the experiment's replay settings, its clock resolved
    data: PreparedData | None = None        # set by the dataset stage
    rules: LearnedRules | None = None       # set by the rules stage
    cache: ModelCache = field(default_factory=ModelCache)
    timings: dict[str, float] = field(default_factory=dict)

    def check_classes(self, n_classes: int) -> None:
        """Once the dataset is known: the class count against the target's limit, before any training."""
        preflight(self.target, self.variants, self.rule_file, n_classes, self.cfg.name)

    @contextmanager
    def timed(self, what: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[what] = self.timings.get(what, 0.0) + time.perf_counter() - t0
