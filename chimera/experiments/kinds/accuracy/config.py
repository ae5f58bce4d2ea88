"""The accuracy kind's configuration: its YAML section, validated."""

from __future__ import annotations

from typing import Literal

from chimera.experiments.kinds.yardstick_common import BaselinesSpec, MultiDatasetExperiment


class AccuracyExperiment(MultiDatasetExperiment):
    kind: Literal["accuracy"] = "accuracy"
    baselines: BaselinesSpec = BaselinesSpec()
