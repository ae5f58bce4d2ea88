"""The hyper_dim kind (Table 4 and its heatmap): m x d_v x quantization bits b. Compiled with no budget
refusal, then the measured allocation is compared with the YAML's per-flow budget; configurations over it are
marked †, measured, not asserted.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NoSection
from chimera.experiments.kinds.hyper_dim import config, render, run
from chimera.experiments.kinds.hyper_dim import tables as T

KIND: Kind[config.HyperDimExperiment, NoSection] = Kind("hyper_dim", "Table 4: m x d_v x quantization bits against a per-flow budget", config.HyperDimExperiment, run.run,
            render.render, (T.HYPER_DIM,), run.cells)
