"""The nightly suite (``results/baseline/nightly.yaml``, beside the golden it is checked against): what runs, which
targets must run, and which may be absent and why. Only what this file allows may be skipped."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from chimera import paths
from chimera.bench import nightly_benches
from chimera.errors import ConfigError, validation_problems
from chimera.formats.units import parse_duration
from chimera.fuzz.mutants import sources
from chimera.fuzz.mutate import target_of
from chimera.targets.registry import TRUTH

ROOT = paths.ROOT
SUITE = ROOT / "results" / "baseline" / "nightly.yaml"


class ExperimentEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(description="experiments/<name>.yaml, or a path to a YAML file")
    targets: list[str] = Field(min_length=1)

    @property
    def label(self) -> str:
        """The name its checks and golden keys use: a path's file stem, so a moved file keeps its golden."""
        return Path(self.name).stem if self.name.endswith((".yaml", ".yml")) else self.name


class FuzzEntry(BaseModel):
    """The night's differential fuzzing: a time budget, or a fixed number of rounds (the same sequences for a
    seed on any machine, however fast: the rounds decide, as with the mutation sample's, and budget_s is unused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    budget_s: float = Field(120.0, gt=0)
    rounds: int | None = Field(None, ge=1, description="fuzz rounds (None: rounds until budget_s is spent)")
    targets: list[str] = Field(default_factory=lambda: [TRUTH])


class MutateEntry(BaseModel):
    """The night's mutation run (invoke mutate): a seeded sample of a fixed size per file, each mutant given a
    fixed number of fuzz rounds, so the same seed draws and judges the same mutants on any machine; the verdict
    comes from the triage (docs/mutants.yaml), never from the sampled score."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    files: list[str] = Field(default_factory=lambda: list(sources()), description="mutant sources (default: all)")
    per_file: int = Field(6, ge=1, description="mutants drawn per file (seeded)")
    fuzz_rounds: int = Field(4, ge=1, description="fuzz rounds of each mutant, before its conformance tests")
    untriaged_days: int = Field(7, ge=0, description="a survivor left untriaged longer than this fails the night")
    budget_s: float | None = Field(None, gt=0, description="a time cap (--mutate-budget); a capped sample depends "
                                                           "on the machine's speed: None runs the whole sample")


class NightlyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    require: list[str] = Field(default_factory=lambda: [TRUTH])
    allow_skip: dict[str, str] = Field(default_factory=dict, description="target -> why it may be absent")
    experiments: list[ExperimentEntry] = Field(default_factory=list)
    benches: list[str] = Field(default_factory=list)
    repeats: int = Field(5, ge=5, description="a median and IQR need at least 5 repeats")
    fuzz: FuzzEntry | None = None
    mutate: MutateEntry | None = None
    seed: int | None = Field(None, description="the fuzzer's seed (default: rotates with the date)")
    overrides: dict[str, dict] = Field(default_factory=dict, description="per experiment name: config overrides")

    @model_validator(mode="after")
    def _consistent(self) -> "NightlyConfig":
        both = sorted(set(self.require) & set(self.allow_skip))
        if both:
            raise ValueError(f"targets {both} are both required and allowed to be skipped")
        bad = [b for b in self.benches if b not in nightly_benches()]
        if bad:
            raise ValueError(f"unknown nightly benches {bad}; choose from {list(nightly_benches())}")
        return self

    def with_require(self, targets: list[str]) -> "NightlyConfig":
        """``--require``: these targets must run tonight (and may not be skipped)."""
        return self.model_copy(update={"require": list(targets),
                                       "allow_skip": {t: w for t, w in self.allow_skip.items() if t not in targets}})

    def with_cli(self, require: list[str] | None = None, repeats: int | None = None,
                 fuzz_budget: str | None = None, mutate_budget: str | None = None) -> "NightlyConfig":
        """The suite with one night's command-line changes (``--require``, ``--repeats``, ``--fuzz-budget``,
        ``--mutate-budget``)."""
        cfg = self.with_require(require) if require else self
        if repeats is not None:
            if repeats < 5:
                raise ConfigError(f"--repeats {repeats}: a median and IQR need at least 5 repeats",
                                  "use --repeats 5 or more")
            cfg = cfg.model_copy(update={"repeats": repeats})
        if fuzz_budget is not None:
            s = parse_duration(fuzz_budget, "--fuzz-budget")
            # a time budget asked for on the command line replaces the suite's rounds too
            fz = None if s == 0 else (cfg.fuzz or FuzzEntry()).model_copy(update={"budget_s": s, "rounds": None})
            cfg = cfg.model_copy(update={"fuzz": fz})
        if mutate_budget is not None:
            s = parse_duration(mutate_budget, "--mutate-budget")
            mu = None if s == 0 else (cfg.mutate or MutateEntry()).model_copy(update={"budget_s": s})
            cfg = cfg.model_copy(update={"mutate": mu})
        return cfg

    def skip_reason(self, target: str) -> str | None:
        """Why ``target`` may be absent tonight, or None when it must run."""
        return None if target in self.require else self.allow_skip.get(target)

    def targets(self) -> list[str]:
        out: list[str] = []
        for e in self.experiments:
            out += [t for t in e.targets if t not in out]
        for t in (self.fuzz.targets if self.fuzz else []):
            if t not in out:
                out.append(t)
        for f in (self.mutate.files if self.mutate else []):
            if target_of(f).name not in out:
                out.append(target_of(f).name)
        return out


def load_suite(path: Path = SUITE) -> NightlyConfig:
    if not path.is_file():
        raise ConfigError(f"no nightly suite at {path}", "restore results/baseline/nightly.yaml from git")
    try:
        return NightlyConfig.model_validate(yaml.safe_load(path.read_text()) or {})
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})", "fix the file (see docs/nightly.md)") from None
    except ValidationError as e:
        raise ConfigError(f"{path}: not a valid nightly suite: {validation_problems(e)}",
                          "fix the file (see docs/nightly.md)") from None
