"""The resources kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from chimera.experiments.kinds.yardstick_common import BaselinesSpec, MultiDatasetExperiment, SweepSpec


class ResourcesExperiment(MultiDatasetExperiment):
    kind: Literal["resources"] = "resources"
    baselines: BaselinesSpec = BaselinesSpec()
    sweep: SweepSpec = SweepSpec()


class ResourcesSection(BaseModel):
    """Manifest section ``resources``: the per-flow budget the run held methods to, and chimera.p4's source."""

    model_config = ConfigDict(extra="allow", frozen=True)
    budget_bits: int | None = None
    p4_source: str | None = None
