"""The accuracy kind (the paper's Table 1): Chimera and every baseline on each named dataset, same split.

Writes accuracy.csv (one row per dataset x method: P/R/F1, where it ran, input
scale, model size, per-flow bits). The report renders the Table 1 layout and the
Pareto figure (F1 against per-flow state bits) from it.
"""

from __future__ import annotations

from chimera.experiments.kinds.accuracy import config, render, run
from chimera.experiments.kinds.accuracy import tables as T
from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.yardstick_common import BaselinesSpec

KIND = Kind("accuracy", "Table 1: Chimera against the paper's baselines and the yardsticks, per dataset",
            config.AccuracyExperiment, run.run, render.render, (T.ACCURACY, T.BOOT),
            section_model=BaselinesSpec, section_name="baselines")
