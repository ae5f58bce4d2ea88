"""The registry of experiment kinds. A new kind is one module in this package (its config, run function and
``KIND`` record: see ``base.Kind``) plus one line below.

- ``variants``: the ablation layout (quickstart, ablation): one row per variant.
- ``stability``: a drifting day through Chimera, Fast-Only and Static-Map (stability24h).
- ``cadence``: the eta x T_cp sweep of the two timescales on that day (hyper_cadence).
- ``accuracy``, ``resources``, ``input_scale``, ``hyper_dim``, ``roc``: Chimera against the paper's baselines
  on the same splits, over several named datasets (Tables 1, 2, 4, the Pareto and ROC figures).
- ``throughput``: delivered pps/Gbps per frame size, Chimera vs bare forwarding vs the software host; 0-loss ladder.
- ``latency``: every packet's in-switch and host-to-host latency at offered loads, switch vs software host.
"""

from __future__ import annotations

from chimera.errors import ConfigError
from chimera.experiments.kinds import (accuracy, cadence, hyper_dim, input_scale, latency, resources, roc, stability,
                                       throughput, variants)
from chimera.experiments.kinds.base import Kind

KINDS: dict[str, Kind] = {k.name: k for k in (
    variants.KIND,
    stability.KIND,
    cadence.KIND,
    accuracy.KIND,
    resources.KIND,
    input_scale.KIND,
    hyper_dim.KIND,
    roc.KIND,
    latency.KIND,
    throughput.KIND,
)}


def kind_of(name: str) -> Kind:
    k = KINDS.get(name)
    if k is None:
        raise ConfigError(f"unknown experiment kind {name!r}", f"use one of: {', '.join(KINDS)}")
    return k
