"""Experiment files: ``experiments/<name>.yaml``, validated when loaded.

A file names a dataset, a rule file, the base model/compile/fusion settings
and a list of variants (ablation rows), each a set of overrides applied to the
base and validated again, so a typo in a variant fails before anything runs.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from chimera import paths
from chimera.compile.config import CompileConfig
from chimera.controlplane.config import ControlPlaneConfig
from chimera.data.adapters import ADAPTERS
from chimera.data.synthetic import ATTACKS
from chimera.errors import ConfigError, ResultsError, validation_problems
from chimera.formats.rundir import check_name
from chimera.model.config import FusionConfig, ModelConfig
from chimera.testbed.replay import ReplayConfig

EXPERIMENTS_DIR = paths.EXPERIMENTS


def known(values: list[str] | tuple[str, ...], known: tuple[str, ...] | list[str], what: str) -> None:
    """A validator's check: every name in ``values`` is one of ``known`` (the error lists them)."""
    bad = [v for v in values if v not in known]
    if bad:
        raise ValueError(f"unknown {what}(s) {bad}; choose from {list(known)}")


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
    class_weights: dict[str, float] = Field(default_factory=dict, description="relative class weights (default 1)")
    class_weights_end: dict[str, float] = Field(default_factory=dict, description="class weights at the end of the "
                                                "capture: the mix drifts linearly from class_weights to these")
    attack_at_s: float | None = Field(None, ge=0, description="attacks as one burst starting here (default: random)")
    drift_step_at_s: float | None = Field(None, ge=0, description="the drift as one step here (default: linear)")
    covariate_tilt: float = Field(0.0, ge=-4, le=4, description="a pure covariate shift: flows are kept by their "
                                  "lengths alone, tilting p(x) toward large (> 0) or small packets as the day goes, "
                                  "p(y | x) fixed (chimera.data.synthetic.keep_probability)")

    @field_validator("attacks")
    @classmethod
    def _known_attacks(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        known(v, ATTACKS, "attack")
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
    model: dict[str, Any] = {}  # YAML overlay: a variant's model overrides, validated when resolved
    compile: dict[str, Any] = {}  # YAML overlay: a variant's compile overrides, validated when resolved
    fusion: dict[str, Any] = {}  # YAML overlay: a variant's fusion overrides, validated when resolved


class ExperimentConfig(BaseModel):
    """What every experiment file says. Each kind (chimera.experiments.kinds) subclasses it with
    ``kind: Literal[...]`` and its own section(s); the file is validated against the kind it names."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: the kind runs on several named datasets (``datasets:``; ``--dataset`` replaces the list by one)
    multi_dataset: ClassVar[bool] = False
    name: str
    kind: str = "variants"
    description: str = ""
    seed: int = 1
    dataset: DatasetSpec | None = None
    datasets: dict[str, DatasetSpec] = Field(default_factory=dict, description="named datasets (multi-dataset kinds)")
    rules: str = "rules/default.yaml"
    rule_precision_floor: float = Field(0.9, ge=0, le=1, description="hard rules less precise than this on the "
                                        "training and validation packets they decide are not installed")
    target: str = "auto"
    model: ModelConfig = ModelConfig()
    compile: CompileConfig = CompileConfig()
    fusion: FusionConfig = FusionConfig()
    replay: ReplayConfig = ReplayConfig()
    control: ControlPlaneConfig = ControlPlaneConfig()
    variants: list[Variant] = Field([Variant(name="Chimera")], min_length=1)

    @model_validator(mode="after")
    def _datasets(self) -> "ExperimentConfig":
        if self.multi_dataset:
            if (self.dataset is None) == (not self.datasets):
                raise ValueError(f"kind {self.kind}: give datasets: (named datasets) or one dataset:")
        elif self.dataset is None or self.datasets:
            raise ValueError(f"kind {self.kind} runs on one dataset: give dataset: (and no datasets:)")
        return self

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        try:
            return check_name(v)
        except ResultsError as e:
            raise ValueError(e.problem) from None

    def named_datasets(self) -> dict[str, DatasetSpec]:
        """The datasets a multi-dataset kind runs on, by name."""
        if self.datasets:
            return dict(self.datasets)
        assert self.dataset is not None
        return {"dataset": self.dataset}

    def the_dataset(self) -> DatasetSpec:
        """The one dataset of a single-dataset kind."""
        if self.dataset is None:
            raise ConfigError(f"{self.name}: kind {self.kind} needs one dataset:", "give dataset: in the YAML")
        return self.dataset


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


#: keys whose value an override replaces whole instead of merging into
REPLACED_WHOLE = ("dataset",)


# dict[str, Any]: YAML overlay: two raw configs merged before validation
def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` applied to ``base``: mappings merge key by key, except a dataset, which ``over`` replaces whole
    (a dataset override never inherits the experiment's own generator arguments, attacks included)."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        whole = k in REPLACED_WHOLE
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) and not whole else v
    return out


def resolve_variants(cfg: ExperimentConfig, where: str = "") -> list[ResolvedVariant]:
    out = []
    for v in cfg.variants:
        try:
            out.append(ResolvedVariant(
                name=v.name, group=v.group,
                model=ModelConfig.model_validate(merge(cfg.model.model_dump(), v.model)),
                compile=CompileConfig.model_validate(merge(cfg.compile.model_dump(), v.compile)),
                fusion=FusionConfig.model_validate(merge(cfg.fusion.model_dump(), v.fusion))))
        except ValidationError as e:
            raise ConfigError(f"{where}: variant '{v.name}': {validation_problems(e)}",
                              "fix the override (see chimera/model/config.py, chimera/compile/config.py)") from None
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: duplicate variant names", "give every variant a unique name")
    return out
