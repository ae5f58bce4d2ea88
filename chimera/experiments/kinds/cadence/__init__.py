"""The cadence kind (hyper_cadence): the two timescales swept, eta (the dataplane EMA step) x T_cp.

One model is trained on the day's first hours (as in stability24h); for every eta
it is compiled with that EMA step, and for every T_cp the day is run with the
slow loop at that period. Each cell's F1 trace gives its stability label
(chimera.metrics.timeseries.trace_stability: computed, never typed in). The
paper's condition eta < 1 / (1 + kappa * T_cp / Δt_install) is then compared
with the measured labels for a range of kappa.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.cadence import config, render, run
from chimera.experiments.kinds.cadence import tables as T

KIND = Kind("cadence", "the two timescales swept: eta x T_cp on the drifting day (hyper_cadence)", config.CadenceExperiment,
            run.run, render.render, (T.CADENCE, T.CADENCE_BINS, T.KAPPA), run.cells, resolve=run.resolve,
            section_model=config.CadenceSection, section_name="stability")
