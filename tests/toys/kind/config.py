"""The toy kind's configuration, and the section it records."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from chimera.experiments.config import ExperimentConfig


class ToySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    top: int = 3


class ToyExperiment(ExperimentConfig):
    kind: Literal["toy"] = "toy"  # type: ignore[assignment]
    toy: ToySpec = ToySpec()


class ToySection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    classes_seen: int
