"""Stage 2, rules: check the hard rules' precision, learn the soft-rule weights on the training split.

A hard rule forces its label (the veto), so a wrong one costs more than no rule:
each is checked on the training and validation packets it decides, and one below
the precision floor is dropped with a warning naming it. Soft rules get learned
non-negative weights (a useless rule ends near 0). Also precomputes, for
validation and test, which soft rules fire and which hard rule (if any) forces a
label: the float fusion (beta tuning, † predictions) needs both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from chimera import paths
from chimera.experiments.stages.dataset import PreparedData
from chimera.rules.spec import Rules, load_rules
from chimera.rules.weights import learn_soft_weights

ROOT = paths.ROOT
log = logging.getLogger(__name__)


@dataclass
class LearnedRules:
    rules: Rules                     # the rules installed (hard rules below the precision floor removed)
    weights: np.ndarray              # W [R, Y] >= 0, float
    fires: dict[str, np.ndarray]     # split -> [N, R] bool
    hard: dict[str, np.ndarray]      # split -> [N] forced label or -1
    hard_precision: dict[str, tuple[int, float]] = field(default_factory=dict)  # train+val: (packets, precision)
    dropped: list[str] = field(default_factory=list)


def rules_path(path: str) -> Path:
    """A rule file path from an experiment: relative paths are from the repository root."""
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


def learn_rules(rules: Rules, data: PreparedData, seed: int, precision_floor: float = 0.9) -> LearnedRules:
    seen = np.concatenate([data.train_rows, data.val_rows])
    prec = rules.hard_precision(data.classes, data.rule_keys(seen), data.y(seen))
    dropped = [n for n, (k, p) in prec.items() if k and p < precision_floor]
    for n in dropped:
        log.warning("hard rule '%s' (%s): precision %.3f on the %d training/validation packets it decides is below "
                    "the floor %.2f; not installed", n, rules.path, prec[n][1], prec[n][0], precision_floor)
    rules = rules.without_hard(dropped)
    W = learn_soft_weights(rules.soft_fires(data.rule_keys(data.train_rows)), data.y(data.train_rows),
                           len(data.classes), seed=seed)
    splits = {"val": data.val_rows, "test": data.test_rows}
    return LearnedRules(rules, W, {k: rules.soft_fires(data.rule_keys(r)) for k, r in splits.items()},
                        {k: rules.hard_labels(data.classes, data.rule_keys(r)) for k, r in splits.items()}, prec,
                        dropped)


def load_and_learn(path: str, data: PreparedData, seed: int, precision_floor: float = 0.9) -> LearnedRules:
    return learn_rules(load_rules(rules_path(path)), data, seed, precision_floor)
