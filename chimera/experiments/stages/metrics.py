"""Stage 6, metrics: packet-level P/R/F1 per variant, per class, confusion, and the ablation row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from chimera.experiments.config import ResolvedVariant
from chimera.experiments.stages.dataset import PreparedData
from chimera.experiments.stages.rules import LearnedRules
from chimera.experiments.stages.target import Execution
from chimera.experiments.stages.train import TrainedVariant
from chimera.formats.artifact import Artifact
from chimera.formats.verdict import VerdictFlag
from chimera.metrics import classification as cm


@dataclass
class VariantResult:
    row: dict[str, Any]              # one row of ablation.csv
    per_class: pd.DataFrame
    confusion: pd.DataFrame
    packets: pd.DataFrame | None     # per test packet (switch variants)


def score_variant(data: PreparedData, v: ResolvedVariant, trained: TrainedVariant, art: Artifact | None,
                  sha: str | None, ex: Execution, rules: LearnedRules | None = None) -> VariantResult:
    y = data.y(data.test_rows)
    pred = ex.pred
    row: dict[str, Any] = {"group": v.group, "variant": v.name, "software_only": v.software_only,
                           "attention": v.model.attention, "keys": v.model.keys, "aggregation": v.model.aggregation,
                           "fusion": trained.fusion.mode, "fusion_fallback": trained.fallback or "",
                           "beta": trained.beta, "val_f1_nn": trained.model.val_f1,
                           "executed_on": ex.executed_on, "target_fallback": ex.fell_back or ""}
    packets = None
    if art is None:
        row.update({"bits_per_flow": np.nan, "table_entries": np.nan, "table_kbits": np.nan,
                    "float_int_agreement": np.nan})
    else:
        assert ex.verdicts is not None
        pos = data.test_in_replay
        flags = ex.verdicts.flags[pos]
        row.update({"bits_per_flow": art.resources["per_flow_bits"]["total"],
                    "table_entries": art.resources["table_entries"], "table_kbits": art.resources["table_bits"] / 1000,
                    "float_int_agreement": float(np.mean(pred == trained.float_pred)),
                    "hard_vetoes": int(np.sum(flags & VerdictFlag.HARD_VETO > 0)),
                    "evictions": ex.result.evictions if ex.result is not None else None,
                    "unparsed": int(np.sum(ex.verdicts.flags & VerdictFlag.UNPARSED > 0)), "artifact_sha256": sha})
        packets = pd.DataFrame({"row": data.test_rows, "flow": data.ds.flows.flow_id[data.test_rows], "label": y,
                                "pred": pred, "flags": flags, "score": ex.verdicts.score[pos],
                                "centroid": ex.verdicts.centroid[pos]})
    row.update(ex.columns())
    if rules is not None:  # how much the symbolic path has to act on (why two fusion rows can coincide)
        row["hard_rule_hits"] = int((rules.hard["test"] >= 0).sum())
        fires = rules.fires["test"]
        row["soft_rule_packets"] = int(fires.any(axis=1).sum()) if fires.size else 0
    row.update(cm.summary(y, pred, data.classes))
    pc = cm.per_class(y, pred, data.classes)
    pc.insert(0, "variant", v.name)
    return VariantResult(row, pc, cm.confusion(y, pred, data.classes), packets)
