"""The tidy tables a roc run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import F, I, S, TableSchema

ROC = TableSchema("roc.csv", {"dataset": S, "detector": S, "where": S, "auc": F, "model_kbits": F, "test_packets": I,
                              "attack_packets": I, "benign_train_packets": I}, keys=("dataset", "detector"),
                  metrics=("auc",))
ROC_CURVES = TableSchema("roc_curves.csv", {"fpr": F, "tpr": F, "dataset": S, "detector": S},
                         keys=("dataset", "detector"))
