"""The variants kind (quickstart, ablation): dataset -> rules -> (per variant) train -> compile -> target ->
metrics -> tables, one row per variant.

Software-only variants (exact softmax, dense attention) have no tables: they
are evaluated by the float software classifier and marked † everywhere.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NightlyTrack
from chimera.experiments.kinds.variants import config, render, run
from chimera.experiments.kinds.variants import tables as T

KIND = Kind("variants", "one row per variant (quickstart, ablation): the paper's ablation layout", config.VariantsExperiment,
            run.run, render.render, (T.ABLATION, T.METRICS, T.PER_CLASS, T.CONFUSION, T.FLOWS, T.PACKETS), run.cells,
            NightlyTrack(T.ABLATION, "variant", "macro_f1"),
            section_model=config.VariantsSection)
