"""What the command line's experiment options mean as configuration overrides (kept out of tasks.py, which
only parses them): a --dataset replaces the experiment's data (its list of datasets for multi-dataset kinds),
--compression sets a stability-type day's compression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chimera.errors import ConfigError
from chimera.experiments.kinds import kind_of
from chimera.experiments.load import load_experiment


def cli_overrides(name: str, dataset: str = "", adapter: str = "ciciot2022", layout: str = "sequential",
                  # dict[str, Any]: YAML overlay: the CLI's overrides, validated by load_experiment
                  max_packets_per_class: int = 0, compression: float = 0.0) -> dict[str, Any]:
    kind = kind_of(load_experiment(name).kind)
    over: dict[str, Any] = {}  # YAML overlay: the CLI's overrides, validated by load_experiment
    if dataset:
        spec = {"path": dataset, "adapter": adapter, "synthetic": None,
                "normalize": {"layout": layout, "max_packets_per_class": max_packets_per_class}}
        if kind.multi_dataset:  # replaces the experiment's list of datasets
            over["datasets"] = {Path(dataset).name or "dataset": spec}
        else:
            over["dataset"] = spec
    if compression:
        if "stability" not in kind.config.model_fields:
            raise ConfigError(f"--compression applies to experiments with a simulated day (stability, cadence), "
                              f"not {name} (kind {kind.name})", "drop --compression")
        over["stability"] = {"compression": compression}
    return over
