"""The registry of experiment kinds. A new kind is one package in this folder (its config, run, tables and
render, and the ``KIND`` record: see ``base.Kind``) plus one line in ``PACKAGES``.

- ``variants``: the ablation layout (quickstart, ablation): one row per variant.
- ``stability``: a drifting day through Chimera, Fast-Only and Static-Map (stability24h).
- ``cadence``: the eta x T_cp sweep of the two timescales on that day (hyper_cadence).
- ``pseudo_grid``: the pseudo-label loop's confidence gate x churn cap, chosen on validation days.
- ``accuracy``, ``resources``, ``input_scale``, ``hyper_dim``, ``roc``: Chimera against the paper's baselines
  on the same splits, over several named datasets (Tables 1, 2, 4, the Pareto and ROC figures).
- ``throughput``: delivered pps/Gbps per frame size, Chimera vs bare forwarding vs the software host; 0-loss ladder.
- ``latency``: every packet's in-switch and host-to-host latency at offered loads, switch vs software host.
"""

from __future__ import annotations

import importlib
from typing import Any

from chimera.errors import ConfigError
from chimera.experiments.kinds.base import Kind

#: one line a kind: its package under chimera/experiments/kinds/, whose KIND is its record
PACKAGES = (
    "variants",
    "stability",
    "cadence",
    "pseudo_grid",
    "accuracy",
    "resources",
    "input_scale",
    "hyper_dim",
    "roc",
    "latency",
    "throughput",
)


def _record(package: str) -> Kind[Any, Any]:
    kind = importlib.import_module(f"{__name__}.{package}").KIND
    assert isinstance(kind, Kind), f"{package}.KIND is not a Kind"
    return kind


KINDS: dict[str, Kind[Any, Any]] = {k.name: k for k in map(_record, PACKAGES)}


def kind_of(name: str) -> Kind[Any, Any]:
    k = KINDS.get(name)
    if k is None:
        raise ConfigError(f"unknown experiment kind {name!r}", f"use one of: {', '.join(KINDS)}")
    return k
