"""The yardsticks of the fidelity goal: a random forest (100 trees) and a decision tree.

Both are scikit-learn models trained on exactly Chimera's training packets and scored on its test packets,
reading what every method reads (chimera.baselines.features.fair_inputs: Chimera's window of token features,
the protocol, both ports in raw and canonical forms, the responder port and the packet index). Their grids,
their class weighting (balanced, as every method's) and the selection on the validation split are the
comparison's budget (chimera.baselines.budget), reported with every result. Never weakened: every training
packet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from chimera.baselines.budget import CLASS_WEIGHT, Search, Tuning, kept_index, search_of
from chimera.baselines.features import fair_inputs, window_features
from chimera.data.dataset import Dataset
from chimera.data.tokens import Tokens
from chimera.metrics.classification import macro_f1

FOREST_TREES = 100


@dataclass
class Tuned:
    """A fitted yardstick, the hyper-parameter chosen, and every candidate's validation macro-F1."""

    model: Any
    chosen: dict[str, Any]  # library boundary: the chosen estimator's keyword arguments
    validation: dict[str, float] = field(default_factory=dict)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict(x))


def _tune(grid: Search, fit: Any, x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray,
          tuning: Tuning) -> Tuned:
    """Fit each configuration on the training rows; keep one by the budget's rule (``kept_index``)."""
    def one(config: dict[str, Any]) -> tuple[Any, float]:  # library boundary: the estimator's keyword arguments
        m = fit(**config).fit(x_tr, y_tr)
        return m, (macro_f1(y_va, m.predict(x_va)) if len(y_va) else 0.0)
    tried = grid.run(one, lambda r: r[1], tuning)
    k = kept_index([f for _, (_, f) in tried])
    return Tuned(tried[k][1][0], tried[k][0], {Search.label(c): f for c, (_, f) in tried})


def tune_tree(x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray, seed: int,
              tuning: Tuning = "full") -> Tuned:
    grid, how = search_of("Tree (yardstick)", tuning)
    return _tune(grid, lambda depth: DecisionTreeClassifier(max_depth=depth, class_weight=CLASS_WEIGHT,
                                                            random_state=seed), x_tr, y_tr, x_va, y_va, how)


def tune_forest(x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray, seed: int,
                tuning: Tuning = "full") -> Tuned:
    grid, how = search_of("Forest (yardstick)", tuning)
    return _tune(grid, lambda max_features: RandomForestClassifier(
        n_estimators=FOREST_TREES, max_features=max_features, class_weight=CLASS_WEIGHT, random_state=seed,
        n_jobs=-1), x_tr, y_tr, x_va, y_va, how)


@dataclass
class YardstickResult:
    forest: np.ndarray   # predictions on the test rows
    tree: np.ndarray
    forest_params: dict[str, Any]  # library boundary: the forest's keyword arguments
    tree_params: dict[str, Any]  # library boundary: the tree's keyword arguments


def fit_yardsticks(ds: Dataset, tokens: Tokens, rows: tuple[np.ndarray, np.ndarray, np.ndarray],
                   labels: tuple[np.ndarray, np.ndarray], window: int, seed: int, tuning: Tuning = "full"
                   ) -> YardstickResult:
    """Both yardsticks on the (train, validation, test) rows, tuned on validation, predicting test."""
    spec = fair_inputs(window)
    tr, va, te = rows
    x_tr, x_va, x_te = (window_features(ds.table, tokens, ds.flows, r, spec) for r in (tr, va, te))
    forest = tune_forest(x_tr, labels[0], x_va, labels[1], seed, tuning)
    tree = tune_tree(x_tr, labels[0], x_va, labels[1], seed, tuning)
    return YardstickResult(forest.predict(x_te), tree.predict(x_te), forest.chosen, tree.chosen)
