"""The pseudo_grid kind (pseudo_validation, pseudo_heldout): the pseudo-label loop's confidence gate x churn cap.

The stability days run the pseudo-label loop (chimera.controlplane.pseudo) at its defaults, fixed before any
measurement. This kind chooses them as a design choice is chosen: on validation data. A validation run replays
day realizations and training seeds that no held-out run uses through every cell of the grid, each arm paired with
its control, and marks the cell each arm would keep (``run.choose``, fixed before the first run) and whether that
choice sits at an edge of the grid that binds. A held-out run then replays the stability days' own realizations
and seeds through the default cell and the chosen ones only: the numbers a reader may quote.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.pseudo_grid import config, render, run
from chimera.experiments.kinds.pseudo_grid import tables as T

KIND = Kind("pseudo_grid", "the pseudo-label loop's gate x churn cap, chosen on validation days (pseudo_validation)",
            config.PseudoGridExperiment, run.run, render.render, (T.GRID, T.UNITS), resolve=run.resolve,
            section_model=config.PseudoGridSection, section_name="stability")
