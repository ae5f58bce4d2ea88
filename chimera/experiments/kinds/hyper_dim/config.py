"""The hyper_dim kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from chimera.experiments.kinds.yardstick_common import MultiDatasetExperiment, SweepSpec


class HyperDimExperiment(MultiDatasetExperiment):
    kind: Literal["hyper_dim"] = "hyper_dim"
    sweep: SweepSpec = SweepSpec()
