"""Experiment kinds: what a run computes and which tables it writes (its report renders from those).

- ``variants``: the ablation layout (quickstart, ablation): one row per variant.
- ``stability``: a compressed day with drift through Chimera, Fast-Only and Static-Map (stability24h).
- ``cadence``: the eta x T_cp sweep of the two timescales on that day (hyper_cadence).
- ``accuracy``, ``resources``, ``input_scale``, ``hyper_dim``, ``roc``: Chimera against the paper's baselines
  on the same splits, over several named datasets (Tables 1, 2, 4, the Pareto and ROC figures).
- ``throughput``: delivered pps/Gbps per frame size, Chimera vs bare forwarding vs the software host; 0-loss ladder.
- ``latency``: every packet's in-switch and host-to-host latency at offered loads, switch vs software host.
"""

from __future__ import annotations

from typing import Callable

from chimera.experiments.kinds import (accuracy, cadence, latency, resources, roc, stability, sweeps, throughput,
                                       variants)
from chimera.experiments.stages.context import RunContext

KINDS: dict[str, Callable[[RunContext], None]] = {
    "variants": variants.run,
    "stability": stability.run,
    "cadence": cadence.run,
    "accuracy": accuracy.run,
    "resources": resources.run,
    "input_scale": sweeps.run_input_scale,
    "hyper_dim": sweeps.run_hyper_dim,
    "roc": roc.run,
    "latency": latency.run,
    "throughput": throughput.run,
}
