"""The variants kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from chimera.experiments.config import ExperimentConfig


class VariantsExperiment(ExperimentConfig):
    kind: Literal["variants"] = "variants"


class VariantsSection(BaseModel):
    """Manifest section ``variants``: every variant as resolved (the YAML's, with its overrides applied)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    variants: list[dict[str, Any]] = Field(default_factory=list)
