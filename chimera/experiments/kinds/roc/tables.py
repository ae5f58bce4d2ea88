"""The tidy tables a roc run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from dataclasses import dataclass

from chimera.formats.rows import schema_of
from chimera.formats.tables import F, S, TableSchema


@dataclass(frozen=True)
class RocRow:
    """One detector on one dataset: its AUC on the test split, the size of its model, the packets it saw."""
    dataset: str
    detector: str
    where: str
    auc: float
    model_kbits: float
    test_packets: int
    attack_packets: int
    benign_train_packets: int


ROC = schema_of(RocRow, "roc.csv", keys=("dataset", "detector"), metrics=("auc",))
ROC_CURVES = TableSchema("roc_curves.csv", {"fpr": F, "tpr": F, "dataset": S, "detector": S},
                         keys=("dataset", "detector"))
