"""Experiment kinds: what a run computes and which tables it writes (its report renders from those).

- ``variants``: the ablation layout (quickstart, ablation): one row per variant.
- ``stability``: a compressed day with drift through Chimera, Fast-Only and Static-Map (stability24h).
- ``cadence``: the eta x T_cp sweep of the two timescales on that day (hyper_cadence).
"""

from __future__ import annotations

from typing import Callable

from chimera.experiments.kinds import cadence, stability, variants
from chimera.experiments.stages.context import RunContext

KINDS: dict[str, Callable[[RunContext], None]] = {
    "variants": variants.run,
    "stability": stability.run,
    "cadence": cadence.run,
}
