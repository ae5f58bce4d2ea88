"""Stage 2, rules: load the rule file and learn the soft-rule weights on the training split.

Also precomputes, for validation and test, which soft rules fire and which hard
rule (if any) forces a label: the float fusion (beta tuning, † predictions) needs both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chimera.experiments.stages.dataset import PreparedData
from chimera.rules.spec import Rules, load_rules
from chimera.rules.weights import learn_soft_weights

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class LearnedRules:
    rules: Rules
    weights: np.ndarray              # W [R, Y] >= 0, float
    fires: dict[str, np.ndarray]     # split -> [N, R] bool
    hard: dict[str, np.ndarray]      # split -> [N] forced label or -1


def rules_path(path: str) -> Path:
    """A rule file path from an experiment: relative paths are from the repository root."""
    p = Path(path)
    return p if p.is_absolute() else ROOT / p


def learn_rules(rules: Rules, data: PreparedData, seed: int) -> LearnedRules:
    W = learn_soft_weights(rules.soft_fires(data.rule_keys[data.train_rows]), data.y(data.train_rows),
                           len(data.classes), seed=seed)
    splits = {"val": data.val_rows, "test": data.test_rows}
    return LearnedRules(rules, W, {k: rules.soft_fires(data.rule_keys[r]) for k, r in splits.items()},
                        {k: rules.hard_labels(data.classes, data.rule_keys[r]) for k, r in splits.items()})


def load_and_learn(path: str, data: PreparedData, seed: int) -> LearnedRules:
    return learn_rules(load_rules(rules_path(path)), data, seed)
