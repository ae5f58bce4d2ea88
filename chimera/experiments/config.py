"""Experiment files: ``experiments/<name>.yaml``, validated when loaded.

A file names a dataset, a rule file, the base model/compile/fusion settings
and a list of variants (ablation rows), each a set of overrides applied to the
base and validated again, so a typo in a variant fails before anything runs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from chimera.compile.config import CompileConfig
from chimera.data.adapters import ADAPTERS
from chimera.data.synthetic import ATTACKS
from chimera.errors import ConfigError, ResultsError
from chimera.formats.rundir import check_name
from chimera.model.config import FusionConfig, ModelConfig
from chimera.testbed.replay import ReplayConfig

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"
Target = Literal["auto", "reference", "ebpf", "bmv2"]


class SyntheticDataset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    profile: Literal["ciciot", "peerrush", "iscxvpn"] = "ciciot"
    flows: int = Field(2000, ge=10)
    seed: int = 1
    duration_s: float = Field(120.0, gt=0)
    attacks: tuple[str, ...] = ()
    attack_share: float = Field(0.05, ge=0, le=0.9)
    drift: float = Field(0.0, ge=0, le=10, description="sizes and timings grow to (1 + drift) x by the end")
    diurnal: float = Field(0.0, ge=0, le=1)
    max_packets_per_flow: int = Field(400, ge=2)

    @field_validator("attacks")
    @classmethod
    def _known_attacks(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [a for a in v if a not in ATTACKS]
        if bad:
            raise ValueError(f"unknown attack(s) {bad}; choose from {list(ATTACKS)}")
        return v


class NormalizeSpec(BaseModel):
    """How a raw dataset directory is normalized (chimera.data.dataset.NormalizeOptions)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    layout: Literal["sequential", "overlay"] = "sequential"
    max_packets_per_class: int = Field(0, ge=0, description="0 = all")


class DatasetSpec(BaseModel):
    """Exactly one of: synthetic (generated, cached under data/), or path (a normalized dataset,
    or a raw dataset directory normalized with ``adapter`` and ``normalize``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    synthetic: SyntheticDataset | None = None
    path: str | None = None
    adapter: str = "ciciot2022"
    normalize: NormalizeSpec = NormalizeSpec()

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, v: str) -> str:
        if v not in ADAPTERS:
            raise ValueError(f"unknown adapter {v!r}; choose one of {sorted(ADAPTERS)}")
        return v

    @model_validator(mode="after")
    def _one(self) -> "DatasetSpec":
        if (self.synthetic is None) == (self.path is None):
            raise ValueError("give exactly one of dataset.synthetic or dataset.path")
        return self


class Variant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    group: str = ""
    model: dict[str, Any] = {}
    compile: dict[str, Any] = {}
    fusion: dict[str, Any] = {}


class ExperimentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    description: str = ""
    seed: int = 1
    dataset: DatasetSpec
    rules: str = "rules/default.yaml"
    rule_precision_floor: float = Field(0.9, ge=0, le=1, description="hard rules less precise than this on the "
                                        "training and validation packets they decide are not installed")
    target: Target = "auto"
    model: ModelConfig = ModelConfig()
    compile: CompileConfig = CompileConfig()
    fusion: FusionConfig = FusionConfig()
    replay: ReplayConfig = ReplayConfig()
    variants: list[Variant] = Field([Variant(name="Chimera")], min_length=1)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        try:
            return check_name(v)
        except ResultsError as e:
            raise ValueError(e.problem) from None


class ResolvedVariant(BaseModel):
    """A variant with its overrides applied and validated."""

    model_config = ConfigDict(frozen=True)
    name: str
    group: str
    model: ModelConfig
    compile: CompileConfig
    fusion: FusionConfig

    @property
    def software_only(self) -> bool:
        return self.model.software_only


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _errors(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(x) for x in er['loc']) or '(top)'}: {er['msg']}" for er in e.errors())


def resolve_variants(cfg: ExperimentConfig, where: str = "") -> list[ResolvedVariant]:
    out = []
    for v in cfg.variants:
        try:
            out.append(ResolvedVariant(
                name=v.name, group=v.group,
                model=ModelConfig.model_validate(_merge(cfg.model.model_dump(), v.model)),
                compile=CompileConfig.model_validate(_merge(cfg.compile.model_dump(), v.compile)),
                fusion=FusionConfig.model_validate(_merge(cfg.fusion.model_dump(), v.fusion))))
        except ValidationError as e:
            raise ConfigError(f"{where}: variant '{v.name}': {_errors(e)}",
                              "fix the override (see chimera/model/config.py, chimera/compile/config.py)") from None
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: duplicate variant names", "give every variant a unique name")
    return out


def available() -> list[str]:
    return sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))


def load_experiment(name_or_path: str, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Load ``experiments/<name>.yaml`` (or a path), apply ``overrides``, validate everything."""
    p = Path(name_or_path)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        p = EXPERIMENTS_DIR / f"{name_or_path}.yaml"
    if not p.is_file():
        raise ConfigError(f"no experiment '{name_or_path}' ({p} not found)",
                          f"available: {', '.join(available())}; or pass a path to a YAML file")
    try:
        raw = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{p}: YAML syntax error{at}: {getattr(e, 'problem', e)}", "fix the YAML") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: the top level is a {type(raw).__name__}, not a mapping of keys (name:, dataset:, ...)",
                          "see experiments/quickstart.yaml for the layout")
    raw = _merge(raw, overrides or {})
    try:
        cfg = ExperimentConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"{p}: {_errors(e)}", "see experiments/quickstart.yaml for a valid example") from None
    resolve_variants(cfg, str(p))
    return cfg
