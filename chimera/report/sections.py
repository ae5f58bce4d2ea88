"""Typed readers of the manifest sections that more than one reader needs (the nightly's ``measured``, the
fuzzer's and the mutation run's results): a renamed field fails mypy and validation, not a night.

``Manifest.sections`` holds each writer's record as JSON; these models read it back. Unknown fields are kept
(``extra="allow"``) so an older reader still opens a newer run.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from chimera.formats.rundir import Manifest


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class BenchStat(_Section):
    median: float | None = None
    iqr: float | None = None
    n: int | None = None
    results: str | None = None
    error: str | None = None


class Coverage(_Section):
    reachable: int = 0
    hit: int = 0
    percent: float = 0.0
    missed: list[str] = Field(default_factory=list)


class FuzzNight(_Section):
    sequences: int = 0
    differences: int = 0
    seed: int | None = None
    targets: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    run: str | None = None
    coverage: dict[str, Coverage] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)
    failed: dict[str, str] = Field(default_factory=dict)
    error: str | None = None


class FuzzResult(_Section):
    sequences: int = 0
    frames: int = 0
    rounds: int = 0
    differences: int = 0
    failures: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    coverage: dict[str, Coverage] = Field(default_factory=dict)


class FuzzPlan(_Section):
    """Section ``fuzz`` of a fuzz run: what it was asked to do."""
    budget_s: float = 0.0
    profiles: list[str] = Field(default_factory=list)
    batch: int = 0
    targets: list[str] = Field(default_factory=list)
    started: str = ""


class MutatePlan(_Section):
    """Section ``mutate`` of a mutation run: its configuration, each file's population, the files skipped."""
    files: list[str] = Field(default_factory=list)
    budget_s: float | None = None
    seed: int = 0
    fuzz_s: float | None = None
    fuzz_rounds: int = 0
    conformance: bool = True
    max_mutants: int = 0
    only: list[str] = Field(default_factory=list)
    population: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)


class NightRecord(_Section):
    """Section ``nightly`` of a night: its suite, code, host and golden; then how long it took and whether it
    regressed (older nights wrote ``regressed`` as a section of its own: ``Flag``)."""
    suite: dict[str, Any] = Field(default_factory=dict)  # JSON in: the suite bench's record, as the manifest holds it
    code: str | None = None
    host: str | None = None
    golden: str | None = None
    skipped_targets: dict[str, str] = Field(default_factory=dict)
    missing_targets: dict[str, str] = Field(default_factory=dict)
    seconds: float | None = None
    regressed: bool | None = None


class Flag(RootModel[bool]):
    """A section that is one yes/no (older nights' ``regressed``)."""


class Score(_Section):
    killed: int = 0
    timeout: int = 0
    survived: int = 0
    equivalent: int = 0
    invalid: int = 0
    population: int = 0
    score: float | None = None       # None (written as null): no mutant of the file was judged
    ci95: tuple[float | None, float | None] = (None, None)


class TriageFinding(_Section):
    """One judged fact of a night's mutation run against docs/mutants.yaml (chimera.fuzz.triage.verdict)."""
    file: str
    regressed: bool
    what: str


class Cumulative(_Section):
    """A file's score over every mutant drawn so far (chimera.fuzz.triage.cumulative)."""
    drawn: int = 0
    killed: int = 0
    survived: int = 0
    equivalent: int = 0
    score: float | None = None       # None: nothing judged
    lo: float | None = None
    hi: float | None = None


class MutateNight(_Section):
    floor: float | None = None        # nights before the triage judged a sampled score against a floor
    files: list[str] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)
    failed: dict[str, str] = Field(default_factory=dict)
    scores: dict[str, Score] = Field(default_factory=dict)
    run: str | None = None
    error: str | None = None
    night: str | None = None
    findings: list[TriageFinding] = Field(default_factory=list)
    new_untriaged: list[str] = Field(default_factory=list)
    cumulative: dict[str, Cumulative] = Field(default_factory=dict)


class MutateResult(_Section):
    scores: dict[str, Score] = Field(default_factory=dict)
    mutants: int = 0


class ExperimentNight(_Section):
    """One experiment x target of a night (or of the golden). A counter is None where the run's table has no
    such column (never measured), and a variant's value None where it was never read (unknown, not 0)."""
    f1: dict[str, float] = Field(default_factory=dict)
    reference_mismatches: dict[str, int | None] | None = None
    register_mismatches: dict[str, int | None] | None = None
    lost: dict[str, int | None] | None = None
    unaccounted: dict[str, int | None] | None = None

    def counter(self, name: str) -> dict[str, int | None] | None:
        return {"reference_mismatches": self.reference_mismatches, "register_mismatches": self.register_mismatches,
                "lost": self.lost, "unaccounted": self.unaccounted}[name]
    clock: str | None = None
    run: str | None = None
    error: str | None = None


class NightMeasured(_Section):
    experiments: dict[str, ExperimentNight] = Field(default_factory=dict)
    benches: dict[str, BenchStat] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)
    failed: dict[str, str] = Field(default_factory=dict)
    fuzz: FuzzNight | None = None
    mutate: MutateNight | None = None

    @field_validator("fuzz", "mutate", mode="before")
    @classmethod
    def _absent(cls, v: Any) -> Any:
        """A night writes ``{}`` for a step its suite does not run: that is no step, not an empty one."""
        return None if v == {} else v


S = TypeVar("S", bound=BaseModel)


def section(m: Manifest, name: str, model: type[S]) -> S | None:
    """A manifest's section read with its model; None where the run has none (a night's ``{}`` for a step it did
    not run is no step)."""
    raw = m.sections.get(name)
    if isinstance(raw, dict) and any(k in ("fuzz", "mutate") and v == {} for k, v in raw.items()):
        m = m.model_copy(update={"sections": {**m.sections, name: {k: v for k, v in raw.items()
                                                                   if not (k in ("fuzz", "mutate") and v == {})}}})
    return m.get(name, model)
