"""The run context: what the stages of one experiment run share, typed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel

from chimera.experiments.config import ExperimentConfig, ResolvedVariant
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.experiments.stages.preflight import preflight
from chimera.experiments.stages.train import ModelCache
from chimera.formats.checkpoints import Checkpoints, Unit
from chimera.formats.rundir import RunDir
from chimera.rules.spec import Rules
from chimera.targets.base import Target
from chimera.testbed.replay import ReplayConfig

C = TypeVar("C", bound=ExperimentConfig)
T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass
class RunContext(Generic[C]):
    """``cfg`` is the kind's own configuration: a kind's run function reads its section without a cast."""

    cfg: C
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
    #: the kind's manifest section: its name and model (set by the runner from the kind's record)
    section: tuple[str, type[BaseModel]] | None = None

    def record(self, value: BaseModel) -> None:
        """Write the kind's own manifest section: only its declared model goes in, under its declared name."""
        if self.section is None or not isinstance(value, self.section[1]):
            want = self.section[1].__name__ if self.section else "no section"
            raise TypeError(f"{self.cfg.kind}: the kind records {want}, not {type(value).__name__}")
        self.run.manifest.put(self.section[0], value)

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

    def unit(self, key: str, kind: type[T], compute: Callable[[], T]) -> T:
        """One unit of a long run (a day x training seed): taken from the checkpoint a stopped run left when this
        run resumes it (its stage timings added to this run's), else computed and checkpointed, so that a run
        stopped part-way redoes only its unfinished units (``invoke run-experiment --resume``)."""
        store = Checkpoints(self.run.path)
        done = store.get(key, kind)
        if done is not None:
            for k, v in done.timings.items():
                self.timings[k] = self.timings.get(k, 0.0) + v
            log.info("[resume] %s: taken from the stopped run's checkpoint", key)
            return done.value
        before = dict(self.timings)
        value = compute()
        spent = {k: v - before.get(k, 0.0) for k, v in self.timings.items() if v != before.get(k, 0.0)}
        store.put(Unit(key, value, spent))
        return value
