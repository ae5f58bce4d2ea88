"""The roc kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from chimera.data.synthetic import ATTACKS
from chimera.experiments.kinds.yardstick_common import MultiDatasetExperiment


class RocSpec(BaseModel):
    """roc: anomaly detectors trained on benign flows, scored on the injected attacks."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    window: int = Field(8, ge=1, le=64)
    codes: int = Field(8, ge=1, le=64, description="latent codes of the integer table AutoEncoder")
    attack_classes: list[str] = Field(default_factory=lambda: list(ATTACKS))
    epochs: int = Field(10, ge=1, le=200)


class RocExperiment(MultiDatasetExperiment):
    kind: Literal["roc"] = "roc"
    roc: RocSpec = RocSpec()
