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
from chimera.formats.rows import Cells
from chimera.formats.verdict import VerdictFlag
from chimera.metrics import classification as cm


@dataclass
class VariantResult:
    row: dict[str, Any]              # one row of ablation.csv
    per_class: pd.DataFrame
    confusion: pd.DataFrame
    packets: pd.DataFrame | None     # per test packet (switch variants)
    pred: np.ndarray | None = None   # the verdict of every test packet (why two rows coincide)


def score_variant(data: PreparedData, v: ResolvedVariant, trained: TrainedVariant, art: Artifact | None,
                  sha: str | None, ex: Execution, rules: LearnedRules | None = None) -> VariantResult:
    y = data.y(data.test_rows)
    pred = ex.pred
    row: Cells = {"group": v.group, "variant": v.name, "software_only": v.software_only,
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
    if ex.result is not None and ex.result.unsharded is not None:  # a sharded run: the unsharded reference beside
        row["macro_f1_unsharded_reference"] = cm.macro_f1(y, ex.result.unsharded.label[data.test_in_replay]
                                                          .astype(np.int64))
    pc = cm.per_class(y, pred, data.classes, data.ds.flows.flow_id[data.test_rows])
    pc.insert(0, "variant", v.name)
    return VariantResult(row, pc, cm.confusion(y, pred, data.classes), packets, np.asarray(pred))


def row_notes(results: list[VariantResult]) -> None:
    """Say in each row what a reader of the table must know: that it cannot run in a switch, that it ran on
    another target than the one asked for, and why it scores exactly like an earlier row (same verdict on
    every test packet), from what the run measured."""
    for i, r in enumerate(results):
        row, notes = r.row, []
        if row["software_only"]:
            notes.append(f"cannot run in a switch: {row['executed_on']}")
        elif row.get("target_fallback"):
            notes.append(f"not on the switch: {row['target_fallback']}")
        if (row.get("shards") or 1) > 1:
            notes.append(f"over {row['shards']} testbeds, each flow on one (its CRC-32 mod {row['shards']}): flow-slot "
                         "collisions and switch-wide state are per shard, so the verdicts are the "
                         f"sharded reference's; the unsharded reference scores "
                         f"{row['macro_f1_unsharded_reference']:.4f}")
        same = next((o for o in results[:i] if o.pred is not None and r.pred is not None
                     and np.array_equal(o.pred, r.pred)), None)
        if same is not None:
            notes.append(_why_same(row, same.row))
        row["row_note"] = "; ".join(notes)


def _why_same(row: Cells, other: Cells) -> str:
    name = other["variant"]
    if row["aggregation"] != other["aggregation"] and {row["aggregation"], other["aggregation"]} == {"batch",
                                                                                                   "incremental"}:
        return (f"verdicts identical to '{name}' by construction: the batch form recomputes the same integer sums "
                "over the window that the incremental form accumulates (docs/pipeline.md); the rows differ in cost")
    if {row["fusion"], other["fusion"]} == {"soft", "cascade"}:
        hits = row.get("hard_rule_hits")
        if hits == 0:
            return (f"verdicts identical to '{name}': no hard rule fires on this test split (hard_rule_hits 0), so "
                    "removing the hard veto (lambda_h = 0) changes no packet")
        return (f"verdicts identical to '{name}': the hard rules fire on {hits} test packets, and the soft path "
                "gives each of them the label the veto forces")
    fused = other if row["fusion"] == "neural" else row
    if "neural" in {row["fusion"], other["fusion"]} and fused["fusion"] in ("cascade", "soft") \
            and fused.get("beta") == 0:
        hits = fused.get("hard_rule_hits")
        veto = (f"; its hard rules fire on {hits} test packets, and the neural path gives each of them the label the "
                "veto forces" if fused["fusion"] == "cascade" and hits else "")
        return (f"verdicts identical to '{name}': validation picked beta = 0 for '{fused['variant']}', so its soft "
                f"rules add nothing{veto}")
    return f"verdicts identical to '{name}' on every test packet"
