"""The yardsticks of the fidelity goal: a random forest (100 trees) and a decision tree.

Both are scikit-learn models trained on exactly Chimera's training packets and scored on its test packets,
reading what every method reads (chimera.baselines.features.fair_inputs: Chimera's window of token features,
the protocol, both ports in raw and canonical forms, the responder port and the packet index). Their few
hyper-parameters are chosen on the validation split only (``TREE_DEPTHS``, ``FOREST_MAX_FEATURES``) and
reported with every result. Never weakened: every training packet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from chimera.baselines.features import fair_inputs, window_features
from chimera.data.dataset import Dataset
from chimera.data.tokens import Tokens
from chimera.metrics.classification import macro_f1

FOREST_TREES = 100
#: the grids tuned on the validation split (macro-F1); ties go to the smaller model
TREE_DEPTHS = (8, 12, 16, 24)
FOREST_MAX_FEATURES: tuple[Any, ...] = ("sqrt", 0.33, 0.66)


@dataclass
class Tuned:
    """A fitted yardstick, the hyper-parameter chosen, and every candidate's validation macro-F1."""

    model: Any
    chosen: dict[str, Any]
    validation: dict[str, float] = field(default_factory=dict)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(x))


def _tune(name: str, grid: tuple[Any, ...], fit: Any, x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray,
          y_va: np.ndarray) -> Tuned:
    """Fit each candidate on the training rows; keep the first with the best validation macro-F1."""
    fitted, scores = [], {}
    for value in grid:
        m = fit(value).fit(x_tr, y_tr)
        scores[f"{name}={value}"] = macro_f1(y_va, m.predict(x_va)) if len(y_va) else 0.0
        fitted.append(m)
    k = int(np.argmax(list(scores.values())))
    return Tuned(fitted[k], {name: grid[k]}, scores)


def tune_tree(x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray, seed: int) -> Tuned:
    return _tune("depth", TREE_DEPTHS, lambda d: DecisionTreeClassifier(max_depth=d, random_state=seed),
                 x_tr, y_tr, x_va, y_va)


def tune_forest(x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray, seed: int) -> Tuned:
    return _tune("max_features", FOREST_MAX_FEATURES,
                 lambda mf: RandomForestClassifier(n_estimators=FOREST_TREES, max_features=mf, random_state=seed,
                                                   n_jobs=-1), x_tr, y_tr, x_va, y_va)


@dataclass
class YardstickResult:
    forest: np.ndarray   # predictions on the test rows
    tree: np.ndarray
    forest_params: dict[str, Any]
    tree_params: dict[str, Any]


def fit_yardsticks(ds: Dataset, tokens: Tokens, rows: tuple[np.ndarray, np.ndarray, np.ndarray],
                   labels: tuple[np.ndarray, np.ndarray], window: int, seed: int) -> YardstickResult:
    """Both yardsticks on the (train, validation, test) rows, tuned on validation, predicting test."""
    spec = fair_inputs(window)
    tr, va, te = rows
    x_tr, x_va, x_te = (window_features(ds.table, tokens, ds.flows, r, spec) for r in (tr, va, te))
    forest = tune_forest(x_tr, labels[0], x_va, labels[1], seed)
    tree = tune_tree(x_tr, labels[0], x_va, labels[1], seed)
    return YardstickResult(forest.predict(x_te), tree.predict(x_te), forest.chosen, tree.chosen)
