"""The artifacts the fuzzer runs: the quickstart model compiled to reach every corner of the pipeline.

Each profile is the quickstart experiment with overrides (trained for 2 epochs: conformance needs any model,
not a good one), built once and cached under ``build/fuzz/artifacts/`` by its overrides and the artifact
format. Together they make every decision point of chimera.formats.coverage reachable:

- ``collide``: 16 flow slots (collisions and evictions everywhere), a 16-slot sample ring that takes every
  packet (wraps at once); the cascade fusion (hard veto);
- ``prior``: the class-EMA prior on (gamma 4), the two-shift EMA step (eta 2^-2 + 2^-4), soft fusion (a hard
  rule matches but does not veto);
- ``symbolic``: rules only (alpha 0), local keys (no global layer: its table always misses): a packet no soft
  rule fires on scores 0 for every class (a tie);
- ``global``: global tokens only (no window: USE_WINDOW 0), so the attention sums are the global layer's
  alone and a packet must start them from zero, not from the previous packet's scratch;
- ``max``: the budget limits chimera.p4 accepts (64 centroids, window 16, m = d_v = 16, 65536 flow slots) at
  the widest table values whose accumulators the compiler can still prove in range (large fused scores: the
  margin clamps).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chimera import paths
from chimera.errors import BudgetError, ChimeraError, ConfigError
from chimera.formats.artifact import FORMAT, Artifact

log = logging.getLogger(__name__)
ROOT = paths.ROOT
CACHE = ROOT / "build" / "fuzz" / "artifacts"
TRAIN = {"model": {"epochs": 2}}


@dataclass(frozen=True)
class Profile:
    name: str
    overrides: dict[str, Any]  # YAML overlay: experiment overrides, validated by load_experiment
    widest_bits: bool = False   # try compile.bits from 15 down to the widest whose bounds hold
    what: str = ""


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("collide", {"compile": {"flow_slots": 16, "sample_slots": 16, "sample_shift": 0}},
            what="16 flow slots, a 16-slot sample ring taking every packet, hard veto"),
    Profile("prior", {"fusion": {"mode": "soft", "gamma": 4.0, "tune_beta": False},
                      "compile": {"ema_eta": 0.3, "flow_slots": 64}},
            what="class-EMA prior, two-shift EMA, soft fusion (no veto)"),
    Profile("symbolic", {"fusion": {"mode": "symbolic", "tune_beta": False}, "model": {"keys": "local"},
                         "compile": {"flow_slots": 256}},
            what="rules only, no global layer: ties where no rule fires, the global table always misses"),
    Profile("global", {"model": {"keys": "global"}, "compile": {"flow_slots": 256}},
            what="global tokens only: no window, the attention sums are the global layer's alone"),
    Profile("max", {"model": {"centroids": 64, "window": 16, "features": 16, "d_v": 16},
                    "compile": {"flow_slots": 65536}}, widest_bits=True,
            what="chimera.p4's limits: 64 centroids, window 16, m = d_v = 16, 65536 slots, widest values"),
)}


# dict[str, Any]: YAML overlay: experiment overrides, validated by load_experiment
def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# dict[str, Any]: YAML overlay: experiment overrides, validated by load_experiment
def _build(overrides: dict[str, Any], data_root: Path, widest_bits: bool) -> Artifact:
    """Train once; compile (with ``widest_bits``, at the widest table values whose bounds the compiler proves)."""
    from chimera.experiments.load import train_one
    from chimera.experiments.stages.compile import compile_variant
    data, rules, v, trained = train_one("quickstart", 0, data_root, overrides)
    if not widest_bits:
        return compile_variant(data, rules, v, trained)
    for bits in range(15, 1, -1):
        try:
            return compile_variant(data, rules, v.model_copy(update={"compile": v.compile.model_copy(
                update={"bits": bits})}), trained)
        except BudgetError as e:
            log.debug("bits %d: %s", bits, e.problem)
    raise ConfigError("no table width fits the budgets for this profile", "lower the profile's sizes")


def artifact(name: str, data_root: Path = ROOT / "data", cache: Path = CACHE) -> Artifact:
    """The profile's artifact (built here once, then read from the cache)."""
    if name not in PROFILES:
        raise ConfigError(f"unknown fuzz profile {name!r}", f"choose from {sorted(PROFILES)}")
    p = PROFILES[name]
    over = _merge(TRAIN, p.overrides)
    key = hashlib.sha256(json.dumps([FORMAT, over, p.widest_bits], sort_keys=True).encode()).hexdigest()[:12]
    path = cache / f"{name}-{key}.json"
    if path.is_file():
        try:
            return Artifact.load(path)
        except ChimeraError as e:
            log.info("rebuilding fuzz profile %s: %s", name, e.problem)
    log.info("building the fuzz profile %s (%s)", name, p.what)
    art = _build(over, data_root, p.widest_bits)
    cache.mkdir(parents=True, exist_ok=True)
    art.save(path)
    return art
