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

from chimera.baselines.zoo import BASELINES, SEQUENCE_BASELINES
from chimera.compile.config import CompileConfig
from chimera.controlplane.config import DAY_S, ControlPlaneConfig
from chimera.data.adapters import ADAPTERS
from chimera.data.synthetic import ATTACKS
from chimera.errors import ConfigError, ResultsError
from chimera.formats.rundir import check_name
from chimera.model.config import FusionConfig, ModelConfig
from chimera.testbed.replay import ReplayConfig

EXPERIMENTS_DIR = Path(__file__).resolve().parents[2] / "experiments"
Target = Literal["auto", "reference", "ebpf", "bmv2"]


def _known(values: list[str] | tuple[str, ...], known: tuple[str, ...] | list[str], what: str) -> None:
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

    @field_validator("attacks")
    @classmethod
    def _known_attacks(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        _known(v, ATTACKS, "attack")
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


Kind = Literal["variants", "stability", "cadence", "accuracy", "resources", "input_scale", "hyper_dim", "roc",
               "latency", "throughput"]
#: kinds that run on several named datasets (``datasets:``; ``--dataset`` replaces the list by one)
MULTI_DATASET_KINDS = ("accuracy", "resources", "input_scale", "hyper_dim", "roc")
Configuration = Literal["Chimera", "Fast-Only", "Static-Map"]


class StabilitySpec(BaseModel):
    """A simulated day replayed through the switch (stability24h, hyper_cadence).

    The day is time-compressed before anything is trained: flows arrive, drift and follow the diurnal load
    on a day of ``day_hours / compression`` real hours, while each flow keeps its own packet timing, so the
    model trains on the trace exactly as it is replayed. ``compression: 1`` is the real day.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    compression: float = Field(576.0, ge=1, le=DAY_S, description="simulated seconds per trace second")
    day_hours: float = Field(24.0, gt=0, le=24)
    train_hours: float = Field(6.0, gt=0, description="the model trains on flows that start in these first hours")
    attack_at_hour: float | None = Field(1.0, ge=0, description="the attack burst starts here")
    drift_step_at_hour: float | None = Field(None, ge=0, description="the drift as one step here (default: linear)")
    bin_minutes: float = Field(60.0, gt=0, description="F1 time bins (simulated minutes)")
    last_hours: float = Field(6.0, gt=0, description="'the last hours', compared with the training hours")
    configurations: list[Configuration] = Field(["Chimera", "Fast-Only", "Static-Map"], min_length=1)
    bootstrap: int = Field(200, ge=0, le=10000, description="resamples of flows per bin for the 95% intervals")
    diagnose: bool = Field(True, description="also run slow-loop variants on the reference to explain the result")

    @model_validator(mode="after")
    def _inside_the_day(self) -> "StabilitySpec":
        if self.train_hours >= self.day_hours:
            raise ValueError(f"train_hours ({self.train_hours}) must be below day_hours ({self.day_hours})")
        if self.last_hours > self.day_hours - self.train_hours:
            raise ValueError(f"last_hours ({self.last_hours}) must fit after the training hours")
        for k in ("attack_at_hour", "drift_step_at_hour"):
            v = getattr(self, k)
            if v is not None and v >= self.day_hours:
                raise ValueError(f"{k} ({v}) must fall inside the day (< {self.day_hours} h)")
        return self

    @property
    def day_s(self) -> float:
        return self.day_hours * 3600.0

    @property
    def trace_s(self) -> float:
        """The compressed day's length on the trace's (replay) clock."""
        return self.day_s / self.compression


class CadenceSpec(BaseModel):
    """The eta x T_cp sweep (hyper_cadence): eta is the dataplane EMA step, T_cp the slow loop's period."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    etas: list[float] = Field([0.05, 0.1, 0.3, 0.5], min_length=1)
    t_cp_s: list[float] = Field([10.0, 60.0, 300.0, 1800.0], min_length=1)

    @field_validator("etas")
    @classmethod
    def _eta_range(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 2**-16 <= x <= 0.75]
        if bad:
            raise ValueError(f"eta values {bad} are out of range [2^-16, 0.75]")
        return v

    @field_validator("t_cp_s")
    @classmethod
    def _tcp_range(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if not 0 < x <= DAY_S]
        if bad:
            raise ValueError(f"T_cp values {bad} are out of range (0, {DAY_S:.0f}] s")
        return v


class BaselinesSpec(BaseModel):
    """The paper's baselines (chimera.baselines.zoo), trained on Chimera's training packets."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    methods: list[str] = Field(default_factory=lambda: list(BASELINES), min_length=1)
    window: int = Field(8, ge=1, le=64, description="packets per decision of the window models")
    leo_depth: int = Field(8, ge=1, le=16, description="Leo's tree depth (leaf table <= 2^depth entries)")
    leo_window: int = Field(4, ge=1, le=64, description="packets Leo's features may look back on")
    epochs: int = Field(10, ge=1, le=200)
    max_train_packets: int = Field(60000, ge=0, description="0 = all; else a seeded sample of the training packets")

    @field_validator("methods")
    @classmethod
    def _known_methods(cls, v: list[str]) -> list[str]:
        _known(v, tuple(BASELINES), "baseline")
        return v


class SweepSpec(BaseModel):
    """input_scale (windows) and hyper_dim (m x d_v x quantization bits, against a per-flow budget)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    windows: list[int] = Field([2, 4, 8, 16, 32], min_length=1)
    features: list[int] = Field([4, 8, 16], min_length=1, description="m, random features")
    d_v: list[int] = Field([4, 8, 16], min_length=1)
    bits: list[int] = Field([4, 8], min_length=1, description="b, table value width")
    per_flow_budget_bits: int = Field(8192, ge=1, description="the budget the ratio divides by (1 KB = 8192)")
    sequence_baselines: list[str] = Field(["BoS", "RNN-B", "CNN-M"], description="input_scale: baselines swept")

    @field_validator("windows")
    @classmethod
    def _windows(cls, v: list[int]) -> list[int]:
        bad = [w for w in v if w < 1 or w & (w - 1)]
        if bad:
            raise ValueError(f"windows {bad}: Chimera's ring needs a power of two >= 1")
        return v

    @field_validator("sequence_baselines")
    @classmethod
    def _known_sequence(cls, v: list[str]) -> list[str]:
        _known(v, SEQUENCE_BASELINES, "sequence baseline")
        return v


class RocSpec(BaseModel):
    """roc: anomaly detectors trained on benign flows, scored on the injected attacks."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    window: int = Field(8, ge=1, le=64)
    codes: int = Field(8, ge=1, le=64, description="latent codes of the integer table AutoEncoder")
    attack_classes: list[str] = Field(default_factory=lambda: list(ATTACKS))
    epochs: int = Field(10, ge=1, le=200)


class LatencySpec(BaseModel):
    """latency: per-packet in-switch and host-to-host latency at offered loads (fixed pps, original packets)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    loads: dict[str, int] = Field(default_factory=lambda: {"low": 200, "high": 20000},
                                  description="load name -> replay rate (packets/s)")
    max_packets: int = Field(3000, ge=10, description="test packets replayed per load")
    software: bool = Field(True, description="also through the software classifier host (the † path)")

    @field_validator("loads")
    @classmethod
    def _loads(cls, v: dict[str, int]) -> dict[str, int]:
        bad = {k: x for k, x in v.items() if x < 1}
        if not v or bad:
            raise ValueError(f"give at least one load, each a rate >= 1 pps (got {v})")
        return v


class ThroughputSpec(BaseModel):
    """throughput: pps and Gbps through s1 per frame size, Chimera vs bare forwarding vs the software host,
    and the highest fixed rate with 0 packets lost unexplained."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    sizes: list[int | Literal["mix"]] = Field([64, 512, 1500, "mix"], min_length=1,
                                              description="Ethernet frame bytes; mix = the dataset's own sizes")
    max_packets: int = Field(20000, ge=100, description="frames per run (test packets, resized)")
    ladder_pps: list[int] = Field([5000, 10000, 20000, 50000, 100000, 200000],
                                  description="fixed rates tried, lowest first, for the highest 0-loss rate")
    software: bool = Field(True, description="also through the software classifier host")

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[int | str]) -> list[int | str]:
        bad = [x for x in v if x != "mix" and not 64 <= int(x) <= 1514]
        if bad:
            raise ValueError(f"frame sizes {bad} outside 64..1514 bytes (or 'mix')")
        return v


class ExperimentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    kind: Kind = "variants"
    description: str = ""
    seed: int = 1
    dataset: DatasetSpec | None = None
    datasets: dict[str, DatasetSpec] = Field(default_factory=dict, description="named datasets (multi-dataset kinds)")
    rules: str = "rules/default.yaml"
    rule_precision_floor: float = Field(0.9, ge=0, le=1, description="hard rules less precise than this on the "
                                        "training and validation packets they decide are not installed")
    target: Target = "auto"
    model: ModelConfig = ModelConfig()
    compile: CompileConfig = CompileConfig()
    fusion: FusionConfig = FusionConfig()
    replay: ReplayConfig = ReplayConfig()
    control: ControlPlaneConfig = ControlPlaneConfig()
    stability: StabilitySpec | None = None
    cadence: CadenceSpec | None = None
    baselines: BaselinesSpec = BaselinesSpec()
    sweep: SweepSpec = SweepSpec()
    roc: RocSpec = RocSpec()
    latency: LatencySpec = LatencySpec()
    throughput: ThroughputSpec = ThroughputSpec()
    variants: list[Variant] = Field([Variant(name="Chimera")], min_length=1)

    @model_validator(mode="after")
    def _kind_sections(self) -> "ExperimentConfig":
        if self.kind in MULTI_DATASET_KINDS:
            if (self.dataset is None) == (not self.datasets):
                raise ValueError(f"kind {self.kind}: give datasets: (named datasets) or one dataset:")
        elif self.dataset is None or self.datasets:
            raise ValueError(f"kind {self.kind} runs on one dataset: give dataset: (and no datasets:)")
        if self.kind in ("stability", "cadence"):
            if self.dataset.synthetic is None:
                raise ValueError(f"kind {self.kind} generates its own day-long trace: give dataset.synthetic "
                                 "(a real capture has no compressible day)")
            if self.stability is None:
                raise ValueError(f"kind {self.kind} needs a stability: section (compression, train_hours, ...)")
        if self.kind in ("latency", "throughput") and self.target == "reference":
            raise ValueError(f"kind {self.kind} measures a testbed: set target: ebpf, bmv2 or auto")
        if self.kind == "cadence" and self.cadence is None:
            raise ValueError("kind cadence needs a cadence: section (etas, t_cp_s)")
        return self

    def named_datasets(self) -> dict[str, DatasetSpec]:
        """The datasets a multi-dataset kind runs on, by name."""
        if self.datasets:
            return dict(self.datasets)
        assert self.dataset is not None
        return {"dataset": self.dataset}

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
    over = dict(overrides or {})
    if "datasets" in over:  # a --dataset replaces the experiment's named datasets, never adds to them
        raw = {**raw, "datasets": over.pop("datasets"), "dataset": None}
    raw = _merge(raw, over)
    try:
        cfg = ExperimentConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"{p}: {_errors(e)}", "see experiments/quickstart.yaml for a valid example") from None
    resolve_variants(cfg, str(p))
    return cfg
