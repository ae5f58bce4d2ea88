"""What an experiment kind is: one record that says everything the rest of the harness needs of it.

A kind is a package, ``chimera/experiments/kinds/<name>/``:

- ``config.py``: its configuration (a subclass of ExperimentConfig with ``kind: Literal["<name>"]`` and its own
  YAML section) and the model of the section it writes into the run's manifest;
- ``run.py``: its run function (and how it splits into sweep cells);
- ``tables.py``: the tidy tables it writes (chimera.formats.tables.TableSchema);
- ``render.py``: its report and figures, from the run directory alone;
- ``__init__.py``: the ``KIND`` record naming those, plus what the nightly tracks.

The registry (``kinds/__init__.py``) lists the records; nothing else names a kind. ``Kind`` is generic over the
kind's config (its run function gets a context typed with it) and its manifest section's model (written with
``record``, read back with ``section``: never by key).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from chimera.experiments.config import ExperimentConfig
from chimera.experiments.stages.context import RunContext
from chimera.formats.rundir import Manifest, RunDir
from chimera.formats.tables import TableSchema
from chimera.report.run import RunView
from chimera.testbed.replay import CLOCKS, Clock

C = TypeVar("C", bound=ExperimentConfig)
R = TypeVar("R", bound=BaseModel)


class NoSection(BaseModel):
    """The section model of a kind that writes no manifest section of its own."""


@dataclass(frozen=True)
class Cell:
    """One unit of a sweep: a label, the config override that restricts the experiment to it, and what it fixes."""

    label: str
    override: dict[str, Any]  # YAML overlay: a cell's overrides, validated by load_experiment
    fixes: dict[str, Any]  # JSON out: what a cell fixes, as the sweep manifest records it


def as_configured(cfg: C, clock: Clock) -> C:
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
class Kind(Generic[C, R]):
    name: str
    doc: str
    config: type[C]
    run: Callable[[RunContext[C]], None]
    render: Callable[[RunView], list[str]]
    tables: tuple[TableSchema, ...]
    cells: Callable[[C], list[Cell]] = one_cell
    nightly: NightlyTrack | None = None
    #: the model of the manifest section the kind writes (``record``) and its readers read (``section``)
    section_model: type[R] | None = None
    #: the section's name in the manifest (default: the kind's name)
    section_name: str = ""
    #: the clock a testbed run of this kind classifies on unless the YAML says otherwise, and the clocks allowed
    default_clock: Clock = "trace"
    clocks: tuple[Clock, ...] = CLOCKS
    #: the kind measures a testbed (latency, throughput): the reference target cannot run it
    needs_testbed: bool = False
    #: multi-dataset kinds: run on every named dataset, or on the first only (resources: one build is enough)
    first_dataset_only: bool = False
    #: the config with its clock-dependent defaults filled in (stability: the day's compression)
    resolve: Callable[[C, Clock], C] = as_configured

    @property
    def multi_dataset(self) -> bool:
        return self.config.multi_dataset

    @property
    def section_key(self) -> str:
        return self.section_name or self.name

    def record(self, run: RunDir, value: R) -> None:
        """Write the kind's own manifest section (typed: its model, nothing else)."""
        if self.section_model is None or not isinstance(value, self.section_model):
            raise TypeError(f"kind {self.name} records a {self.section_model}, not a {type(value).__name__}")
        run.manifest.put(self.section_key, value)

    def section(self, m: Manifest) -> R | None:
        """The kind's section of a run's manifest, read with its model (None: the run has none)."""
        return None if self.section_model is None else m.get(self.section_key, self.section_model)

    def table(self, name: str) -> TableSchema:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(f"kind {self.name} writes no table {name}")
