"""Leo's decision tree in switch tables: per-feature range tables plus one leaf table. (NetBeacon's multi-phase
trees are not modelled here: it has no row of its own.)

A trained scikit-learn tree tests ``x <= t`` with float thresholds halfway
between integers. On integer features that is ``x <= floor(t)``. Each feature
the tree uses gets a range table that maps its value to an interval code (the
number of the feature's thresholds below the value); each leaf is a box of code
intervals, one range (or ternary) entry of the leaf table, whose action is the
class. A packet's codes fall in exactly one box, so the integer pipeline equals
the float tree on every packet (a test checks it on every test packet).

Per-flow state: the flow's earlier packets' fields that the tree actually tests
(lag >= 1), at their header widths. Only what is used is stored, as Leo does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from chimera.baselines.budget import CLASS_WEIGHT
from chimera.baselines.features import FIELD_BITS, WindowSpec
from chimera.compile.build import bits_for


@dataclass
class IntegerTree:
    """Range tables (thresholds per used feature) and the leaf table (code boxes -> class)."""

    features: np.ndarray          # [F] used feature columns
    thresholds: list[np.ndarray]  # per used feature: sorted int64 thresholds (x <= t goes left)
    leaf_lo: np.ndarray           # [leaves, F] code interval per feature (inclusive)
    leaf_hi: np.ndarray
    leaf_class: np.ndarray        # [leaves]
    spec: WindowSpec
    n_classes: int

    @classmethod
    def from_sklearn(cls, tree: DecisionTreeClassifier, spec: WindowSpec) -> "IntegerTree":
        t = tree.tree_
        used = np.unique(t.feature[t.feature >= 0])
        col = {int(f): i for i, f in enumerate(used)}
        thr = [np.unique(np.floor(t.threshold[t.feature == f]).astype(np.int64)) for f in used]
        lo_rows, hi_rows, cls_rows = [], [], []
        stack = [(0, np.zeros(len(used), np.int64), np.array([len(x) for x in thr], np.int64))]
        while stack:
            node, lo, hi = stack.pop()
            if t.children_left[node] < 0:
                lo_rows.append(lo)
                hi_rows.append(hi)
                cls_rows.append(int(np.argmax(t.value[node][0])))
                continue
            i = col[int(t.feature[node])]
            k = int(np.searchsorted(thr[i], np.int64(np.floor(t.threshold[node]))))  # x <= thr[k] <=> code <= k
            left_hi, right_lo = hi.copy(), lo.copy()
            left_hi[i], right_lo[i] = min(hi[i], k), max(lo[i], k + 1)
            stack.append((int(t.children_right[node]), right_lo, hi))
            stack.append((int(t.children_left[node]), lo, left_hi))
        classes = tree.classes_.astype(np.int64)
        return cls(used.astype(np.int64), thr, np.array(lo_rows).reshape(-1, len(used)),
                   np.array(hi_rows).reshape(-1, len(used)), classes[np.array(cls_rows, np.int64)], spec,
                   int(classes.max()) + 1)

    def codes(self, x: np.ndarray) -> np.ndarray:
        """The range tables: [N, F] interval codes."""
        return np.stack([np.searchsorted(th, x[:, f], side="left") for f, th in zip(self.features, self.thresholds)],
                        axis=1) if len(self.features) else np.zeros((len(x), 0), np.int64)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The leaf table: the one box the codes fall in; integer operations only."""
        c = self.codes(np.asarray(x, np.int64))
        out = np.full(len(x), -1, np.int64)
        for lo, hi, y in zip(self.leaf_lo, self.leaf_hi, self.leaf_class):
            m = np.all((c >= lo) & (c <= hi), axis=1)
            out[m] = y
        if (out < 0).any():
            raise AssertionError("a packet matched no leaf: the leaf boxes do not tile the code space")
        return out

    # resources --------------------------------------------------------------------------------------------
    def feature_widths(self) -> list[int]:
        names = self.spec.names()
        return [FIELD_BITS[names[f].split("[")[0]] for f in self.features]

    def resources(self) -> dict[str, int]:
        """Entries and bits by match kind, as installed (range tables are TCAM-like, the leaf table too)."""
        widths = self.feature_widths()
        code_bits = [bits_for(len(th) + 1) for th in self.thresholds]
        range_entries = sum(len(th) + 1 for th in self.thresholds)
        range_bits = sum((len(th) + 1) * (2 * w + cb) for th, w, cb in zip(self.thresholds, widths, code_bits))
        leaf_key = sum(code_bits)
        cls_bits = bits_for(self.n_classes)
        leaves = len(self.leaf_class)
        return {"range_tables": len(self.features), "range_entries": range_entries, "range_bits": range_bits,
                "leaf_entries": leaves, "leaf_key_bits": leaf_key, "leaf_bits": leaves * (2 * leaf_key + cls_bits),
                "table_entries": range_entries + leaves, "exact_bits": 0,
                "ternary_range_bits": range_bits + leaves * 2 * leaf_key,
                "action_data_bits": max([*code_bits, cls_bits]),
                "model_bits": range_bits + leaves * (2 * leaf_key + cls_bits)}

    def per_flow_bits(self) -> int:
        """Stored fields of earlier packets that the tree tests (lag >= 1), at header width."""
        names = self.spec.names()
        stored = {names[f] for f in self.features if "[t-" in names[f] and not names[f].endswith("[t-0]")}
        return int(sum(FIELD_BITS[n.split("[")[0]] for n in stored))


def fit_leo(x_tr: np.ndarray, y_tr: np.ndarray, spec: WindowSpec, depth: int, seed: int
            ) -> tuple[DecisionTreeClassifier, IntegerTree]:
    tree = DecisionTreeClassifier(max_depth=depth, class_weight=CLASS_WEIGHT, random_state=seed).fit(x_tr, y_tr)
    return tree, IntegerTree.from_sklearn(tree, spec)
