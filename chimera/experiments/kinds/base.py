"""What an experiment kind is: one record that says everything the rest of the harness needs of it.

A kind module (``chimera/experiments/kinds/<name>.py``) defines its configuration
(a subclass of ExperimentConfig with ``kind: Literal["<name>"]`` and its own
section), its run function, and a ``KIND`` record naming those plus its renderer,
its tables, how it splits into sweep cells and what the nightly tracks. The
registry (``kinds/__init__.py``) lists the records; nothing else names a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chimera.experiments.config import ExperimentConfig
from chimera.experiments.stages.context import RunContext
from chimera.formats.tables import TableSchema
from chimera.report.run import RunView
from chimera.testbed.replay import CLOCKS, Clock


@dataclass(frozen=True)
class Cell:
    """One unit of a sweep: a label, the config override that restricts the experiment to it, and what it fixes."""

    label: str
    override: dict[str, Any]
    fixes: dict[str, Any]


def as_configured(cfg: ExperimentConfig, clock: Clock) -> ExperimentConfig:
    """Kinds with no clock-dependent defaults."""
    return cfg


def one_cell(cfg: ExperimentConfig) -> list[Cell]:
    """Kinds that do not split: one task per dataset and seed."""
    return [Cell("all", {}, {})]


@dataclass(frozen=True)
class NightlyTrack:
    """What the nightly reads from a run of this kind: one F1 per row key, and the counters that must be 0."""

    table: TableSchema
    key: str                    # the row key column (variant, configuration)
    metric: str                 # the F1 column
    counters: tuple[str, ...] = ("reference_mismatches", "register_mismatches", "lost")


@dataclass(frozen=True)
class Kind:
    name: str
    doc: str
    config: type[ExperimentConfig]
    run: Callable[[RunContext], None]
    render: Callable[[RunView], list[str]]
    tables: tuple[TableSchema, ...]
    cells: Callable[[ExperimentConfig], list[Cell]] = one_cell
    nightly: NightlyTrack | None = None
    #: the clock a testbed run of this kind classifies on unless the YAML says otherwise, and the clocks allowed
    default_clock: Clock = "trace"
    clocks: tuple[Clock, ...] = CLOCKS
    #: the kind measures a testbed (latency, throughput): the reference target cannot run it
    needs_testbed: bool = False
    #: multi-dataset kinds: run on every named dataset, or on the first only (resources: one build is enough)
    first_dataset_only: bool = False
    #: the config with its clock-dependent defaults filled in (stability: the day's compression)
    resolve: Callable[[ExperimentConfig, Clock], ExperimentConfig] = as_configured
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def multi_dataset(self) -> bool:
        return self.config.multi_dataset

    def table(self, name: str) -> TableSchema:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"kind {self.name} writes no table {name}")
