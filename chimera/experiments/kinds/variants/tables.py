"""The tidy tables a variants run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import REPLAY_COLUMNS, SUMMARY_METRICS, TRAINING_COLUMNS, B, F, I, S, TableSchema, _cols

# ------------------------------------------------------------------ variants (quickstart, ablation)
ABLATION = TableSchema("ablation.csv", _cols(
    {"group": S, "variant": S, "software_only": B, "attention": S, "keys": S, "aggregation": S, "fusion": S,
     "fusion_fallback": S, "beta": F, "val_f1_nn": F, "executed_on": S, "target_fallback": S, "runs_on_switch": B,
     "row_note": S, "bits_per_flow": I, "table_entries": I, "table_kbits": F, "float_int_agreement": F,
     "hard_vetoes": I, "hard_rule_hits": I, "soft_rule_packets": I, "evictions": I, "unparsed": I, "new_flows": I,
     "artifact_sha256": S, "offline_agreement": F},
    TRAINING_COLUMNS, SUMMARY_METRICS, REPLAY_COLUMNS), keys=("variant",), metrics=("macro_f1", "macro_precision", "macro_recall",
                                                                   "accuracy"),
    doc="one row per variant: how it was trained and chosen, where it ran, its size, its scores and (testbed) "
        "its replay")
METRICS = TableSchema("metrics.csv", {"variant": S, "metric": S, "value": F}, keys=("variant", "metric"),
                      doc="ablation.csv's metrics in long form")
PER_CLASS = TableSchema("per_class.csv", {"variant": S, "class": S, "precision": F, "recall": F, "f1": F, "support": I,
                                         "test_flows": I, "scored": S},
                        keys=("variant", "class"), metrics=("f1",))
CONFUSION = TableSchema("confusion.csv", {"true": S, "pred": S, "count": I, "variant": S},
                        keys=("variant", "true", "pred"))
FLOWS = TableSchema("flows.csv", {"flow": I, "label": I, "packets": I, "majority_pred": I, "packet_accuracy": F},
                    keys=("flow",), doc="the first switch variant, per flow")
PACKETS = TableSchema("packets.csv.gz", {"row": I, "flow": I, "label": I, "pred": I, "flags": I, "score": I,
                                         "centroid": I}, keys=("row",), doc="the first switch variant, per test packet")
