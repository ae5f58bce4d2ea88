"""The input_scale kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from chimera.experiments.kinds.yardstick_common import BaselinesSpec, MultiDatasetExperiment, SweepSpec


class InputScaleExperiment(MultiDatasetExperiment):
    kind: Literal["input_scale"] = "input_scale"
    baselines: BaselinesSpec = BaselinesSpec()
    sweep: SweepSpec = SweepSpec()
