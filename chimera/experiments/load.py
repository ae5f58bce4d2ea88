"""Loading an experiment file: ``experiments/<name>.yaml`` (or a path), validated against the kind it names.

The experiment configuration is a union of the registered kinds' configurations,
discriminated on ``kind`` (``variants`` when the file names none), so a file
holds exactly the sections its kind has and a typo fails before anything runs.
``build_artifact`` is the public "train and compile one variant of an
experiment" API (``invoke topo``, ``build``, ``p4info``, the benches and tests).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union

import yaml
from pydantic import Field, TypeAdapter, ValidationError

from chimera.errors import ConfigError, validation_problems
from chimera.experiments.config import EXPERIMENTS_DIR, ExperimentConfig, ResolvedVariant, merge, resolve_variants
from chimera.experiments.kinds import KINDS, kind_of
from chimera.experiments.stages.compile import compile_variant
from chimera.experiments.stages.dataset import PreparedData, prepare, resolve_dataset
from chimera.experiments.stages.rules import LearnedRules, load_and_learn
from chimera.experiments.stages.train import ModelCache, TrainedVariant, train_variant
from chimera.formats.artifact import Artifact


@functools.lru_cache(maxsize=8)
def _adapter(kinds: tuple[str, ...]) -> TypeAdapter[Any]:
    models = tuple(KINDS[k].config for k in kinds)
    union = models[0] if len(models) == 1 else Union[models]  # noqa: UP007 - built at run time
    # built from the registry at run time: mypy cannot follow a Union of runtime values
    return TypeAdapter(Annotated[union, Field(discriminator="kind")])  # type: ignore[arg-type]


# dict[str, Any]: YAML in: the experiment file before validation
def validate_experiment(raw: dict[str, Any], where: str) -> ExperimentConfig:
    """A raw mapping as the configuration of the kind it names."""
    raw = {**raw, "kind": raw.get("kind") or "variants"}
    kind_of(str(raw["kind"]))  # an unknown kind is named with the known ones
    try:
        cfg = _adapter(tuple(KINDS)).validate_python(raw)
    except ValidationError as e:
        raise ConfigError(f"{where}: {validation_problems(e)}", "see experiments/quickstart.yaml for a valid example") from None
    assert isinstance(cfg, ExperimentConfig)
    return cfg


def available() -> list[str]:
    return sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))


def experiment_file(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        p = EXPERIMENTS_DIR / f"{name_or_path}.yaml"
    if not p.is_file():
        raise ConfigError(f"no experiment '{name_or_path}' ({p} not found)",
                          f"available: {', '.join(available())}; or pass a path to a YAML file")
    return p


# dict[str, Any]: YAML overlay: overrides, validated with the file
def load_experiment(name_or_path: str, overrides: dict[str, Any] | None = None) -> ExperimentConfig:
    """Load ``experiments/<name>.yaml`` (or a path), apply ``overrides``, validate everything."""
    p = experiment_file(name_or_path)
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
    cfg = validate_experiment(merge(raw, over), str(p))
    resolve_variants(cfg, str(p))
    return cfg


@dataclass
class BuiltArtifact:
    art: Artifact
    data: PreparedData
    variant: ResolvedVariant
    trained: TrainedVariant


def train_one(experiment: str = "quickstart", variant: int = 0, data_root: Path = Path("data"),
              overrides: dict[str, Any] | None = None  # YAML overlay: overrides, validated with the file
              ) -> tuple[PreparedData, LearnedRules, ResolvedVariant, TrainedVariant]:
    """(data, learned rules, variant, trained variant) of variant ``variant`` of ``experiment`` (with config
    ``overrides``), as a run prepares them: what compiling it needs."""
    cfg = load_experiment(experiment, overrides)
    v = resolve_variants(cfg, experiment)[variant]
    data = prepare(resolve_dataset(cfg.the_dataset(), data_root), cfg.seed)
    rules = load_and_learn(cfg.rules, data, cfg.seed, cfg.rule_precision_floor)
    return data, rules, v, train_variant(data, rules, v, cfg.seed, ModelCache())


def build_artifact(experiment: str = "quickstart", variant: int = 0, data_root: Path = Path("data"),
                   # dict[str, Any]: YAML overlay: overrides, validated with the file
                   overrides: dict[str, Any] | None = None) -> BuiltArtifact:
    """Train and compile variant ``variant`` of ``experiment`` (with config ``overrides``), as a run would."""
    data, rules, v, trained = train_one(experiment, variant, data_root, overrides)
    return BuiltArtifact(compile_variant(data, rules, v, trained), data, v, trained)
