"""The yardsticks of the fidelity goal: a random forest (100 trees) and a decision tree (depth 12).

Both are scikit-learn models trained on exactly Chimera's training packets and
scored on its test packets. Their inputs are every input Chimera uses, as the
flow's last ``window`` packets' token features plus, for the current packet,
the protocol, both ports and the packet index within the flow (Chimera reads the
responder port and the packet index as value sub-tokens, and its rules read
ports, flags, direction and the packet count). ``chimera_inputs`` is that list
in one place; a test checks it covers the rule key and the token fields, so a
new Chimera input cannot leave the yardsticks behind. Never weakened: 100
trees, depth 12, every training packet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from chimera.baselines.features import TOKEN_FIELDS, WindowSpec, window_features
from chimera.data.dataset import Dataset
from chimera.data.tokens import Tokens

FOREST_TREES = 100
TREE_DEPTH = 12
#: per-packet inputs beyond the window's token fields: everything else Chimera's tokens and rules read
CURRENT_PACKET_INPUTS = ("proto", "sport", "dport", "pkt_index")


def chimera_inputs(window: int) -> WindowSpec:
    """The inputs a yardstick gets: Chimera's window of token features plus what its sub-tokens and rules read."""
    return WindowSpec(window=window, fields=TOKEN_FIELDS, extra=CURRENT_PACKET_INPUTS)


@dataclass
class YardstickResult:
    forest: np.ndarray   # predictions on the test rows
    tree: np.ndarray


def fit_yardsticks(ds: Dataset, tokens: Tokens, train_rows: np.ndarray, y_train: np.ndarray, test_rows: np.ndarray,
                   window: int, seed: int) -> YardstickResult:
    spec = chimera_inputs(window)
    x_tr = window_features(ds.table, tokens, ds.flows, train_rows, spec)
    x_te = window_features(ds.table, tokens, ds.flows, test_rows, spec)
    forest = RandomForestClassifier(n_estimators=FOREST_TREES, random_state=seed, n_jobs=-1).fit(x_tr, y_train)
    tree = DecisionTreeClassifier(max_depth=TREE_DEPTH, random_state=seed).fit(x_tr, y_train)
    return YardstickResult(forest.predict(x_te), tree.predict(x_te))
