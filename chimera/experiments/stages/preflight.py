"""Before any training: every variant fits the target's compiled-in limits (or the run fails in seconds)."""

from __future__ import annotations

from chimera.compile.build import planned_constants
from chimera.errors import ConfigError
from chimera.experiments.config import ResolvedVariant
from chimera.rules.spec import Rules
from chimera.targets.base import Target, exceeded
from chimera.targets.registry import classes
from chimera.targets.registry import TRUTH

#: where each checked artifact constant comes from, for the error message
CONSTANT_SOURCE = {"WINDOW": "model.window", "NUM_CENTROIDS": "model.centroids", "RF_FEATURES": "model.features (m)",
                   "D_V": "model.d_v", "LEN_FINE": "model.len_fine", "FLOW_SLOTS": "compile.flow_slots",
                   "SAMPLE_SLOTS": "compile.sample_slots", "SOFT_RULES": "the rule file's soft rules",
                   "HARD_ENTRIES": "the rule file's hard rules (ternary entries after range expansion)",
                   "SOFT_ENTRIES_PER_RULE": "the rule file's largest soft rule (ternary entries)",
                   "NUM_CLASSES": "the dataset's classes"}


def preflight(target: Target, variants: list[ResolvedVariant], rule_file: Rules, n_classes: int | None = None,
              where: str = "") -> None:
    """Fail before any training when a variant would compile past the target's compiled-in limits
    (chimera.p4: 16 classes, window <= 16, <= 64 centroids, 16 soft rules, <= 65536 slots, entry caps)."""
    limits = target.limits()
    if not limits:
        return
    for v in variants:
        if v.software_only:
            continue
        over = exceeded(planned_constants(v.model, v.compile, rule_file, n_classes), limits)
        if over:
            what = "; ".join(f"{CONSTANT_SOURCE.get(k, k)} = {val} exceeds the {target.name} program's maximum "
                             f"{lim} ({k})" for k, val, lim in over)
            fits = [c.name for c in classes() if c.name != target.name and not exceeded(
                {k: val for k, val, _ in over}, c.limits())]
            raise ConfigError(f"{where or 'experiment'}: variant '{v.name}': {what}",
                              "lower it in the experiment YAML (or the variant's overrides), or run on a target "
                              f"without this limit (--target {' or '.join(fits) or TRUTH})")
