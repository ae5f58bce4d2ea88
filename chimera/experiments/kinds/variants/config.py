"""The variants kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from chimera.baselines.budget import Tuning
from chimera.experiments.config import ExperimentConfig


class VariantsExperiment(ExperimentConfig):
    kind: Literal["variants"] = "variants"
    tuning: Tuning | None = Field(None, description="each variant under the comparison's budget "
                                  "(chimera.baselines.budget), as Table 1's methods are: full, every configuration "
                                  "of Chimera's grid chosen on validation, at the fusion's configured beta; first, the "
                                  "grid's first only (a smoke run); wide, every configuration of Chimera's widened search (budget.WIDE: the check on "
                                  "rows whose budgeted choice binds at an edge, experiments/ablation_wide.yaml). Unset: trained as its model section says, beta "
                                  "chosen on validation (a demonstration, not a comparison)")


class VariantsSection(BaseModel):
    """Manifest section ``variants``: every variant as resolved (the YAML's, with its overrides applied)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    # dict[str, Any]: YAML in: each variant's overlay, validated when resolved
    variants: list[dict[str, Any]] = Field(default_factory=list)
