"""The input_scale kind: F1 against the window L (packets per decision) for Chimera and the sequence
baselines, with the per-flow state each L costs.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NoSection
from chimera.experiments.kinds.input_scale import config, render, run
from chimera.experiments.kinds.input_scale import tables as T

KIND: Kind[config.InputScaleExperiment, NoSection] = Kind("input_scale", "F1 against the window L, Chimera and the sequence baselines", config.InputScaleExperiment, run.run,
            render.render, (T.INPUT_SCALE,), run.cells)
