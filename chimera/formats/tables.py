"""The tidy tables of a run directory: each one's file name, columns (with types) and key columns, once.

Each kind declares the tables it writes in its own package
(``chimera/experiments/kinds/<kind>/tables.py``); the kinds write them, and the
reports, ``invoke compare``, the sweep merge and the nightly read them, all
through these objects, so a renamed column or file is one edit and a typo
fails where it is written. ``open_columns`` tables may carry
further columns (per-method extras of the yardstick tables, the trace
labels of a cadence cell); every listed column keeps its type there too.
"""

from __future__ import annotations

import os

from collections.abc import Mapping

from dataclasses import dataclass

from pathlib import Path

from types import MappingProxyType

import pandas as pd

from chimera.errors import ResultsError

Dtype = str  # "int" | "float" | "str" | "bool"


@dataclass(frozen=True)
class TableSchema:
    name: str                              # the file in the run directory (.csv or .csv.gz)
    columns: Mapping[str, Dtype]
    keys: tuple[str, ...] = ()             # columns that identify a row (compare and merges match on these)
    doc: str = ""
    open_columns: bool = False
    metrics: tuple[str, ...] = ()          # the columns a comparison or a sweep summary reads as results

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", MappingProxyType(dict(self.columns)))
        missing = [k for k in self.keys if k not in self.columns]
        if missing:
            raise ValueError(f"{self.name}: key columns {missing} are not among its columns")

    @property
    def int_columns(self) -> frozenset[str]:
        return frozenset(c for c, t in self.columns.items() if t == "int")

    def check(self, df: pd.DataFrame) -> None:
        """The frame is this table: its keys are there, and (closed tables) no column is unknown."""
        missing = [k for k in self.keys if k not in df.columns]
        unknown = [] if self.open_columns else [c for c in df.columns if c not in self.columns]
        if missing or unknown:
            raise ResultsError(f"{self.name}: " + "; ".join(
                ([f"key columns {missing} missing"] if missing else []) +
                ([f"columns {unknown} are not in its schema (chimera/formats/tables.py)"] if unknown else [])),
                "add the column to the table's schema, or fix its name where the table is written")

    def write(self, df: pd.DataFrame, run_dir: str | os.PathLike[str]) -> Path:
        """Write the table (checked) atomically into ``run_dir``."""
        self.check(df)
        p = Path(run_dir) / self.name
        tmp = p.with_name(f".{p.name}.tmp")
        df.to_csv(tmp, index=False, compression="gzip" if self.name.endswith(".gz") else None)
        os.replace(tmp, p)
        return p

    def read(self, run_dir: str | os.PathLike[str]) -> pd.DataFrame:
        p = Path(run_dir) / self.name
        if not p.is_file():
            raise ResultsError(f"{run_dir}: {self.name} is missing", "the run directory is incomplete; rerun it")
        df = pd.read_csv(p)
        missing = [k for k in self.keys if k not in df.columns]
        if missing:
            raise ResultsError(f"{p}: key columns {missing} missing", "the table was written by another version")
        return df

    def exists(self, run_dir: str | os.PathLike[str]) -> bool:
        return (Path(run_dir) / self.name).is_file()


def _cols(*groups: Mapping[str, Dtype], **more: Dtype) -> dict[str, Dtype]:
    out: dict[str, Dtype] = {}
    for g in groups:
        out.update(g)
    out.update(more)
    return out

F, I, S, B = "float", "int", "str", "bool"

#: what a replay through a switch adds to a row (chimera.testbed.outcome.ReplayOutcome.columns)
REPLAY_COLUMNS: dict[str, Dtype] = {
    "clock": S, "pace": S, "replay_attempts": I, "replayed": I, "verdicts": I, "not_sent": I, "not_sent_reason": S,
    "dropped_by_capture": I, "lost": I, "cut_frames": I, "foreign_frames": I, "unmarked_frames": I, "reference_mismatches": I,
    "register_mismatches": I, "conformance_checked": I, "install_ms": F, "latency_switch_p50_us": F,
    "latency_switch_p99_us": F, "latency_host_p50_us": F, "latency_host_p99_us": F, "sent_pps": F, "switch_pps": F,
    "recv_pps": F, "new_flows": I, "shards": I, "macro_f1_unsharded_reference": F}

#: how a model was trained and chosen (chimera.baselines.budget.tuning_columns, and the epochs of the kept model)
TRAINING_COLUMNS: dict[str, Dtype] = {
    "configs_tried": I, "scorings": I, "chosen": S, "at_edge": S, "edge_binds": B, "val_f1": F, "validation": S,
    "cap_reached_in": I, "epochs_run": I, "stopped_by": S, "epoch_cap": I}

SUMMARY_METRICS: dict[str, Dtype] = {"macro_precision": F, "macro_recall": F, "macro_f1": F, "accuracy": F,
                                     "packets": I}

# ------------------------------------------------------------------ the yardstick kinds
METHOD_ROW: dict[str, Dtype] = {
    "dataset": S, "method": S, "where": S, "kind": S, "task": S, "precision": F, "recall": F, "f1": F, "accuracy": F,
    "input_bits": I, "input_fields": S, "model_kbits": F, "per_flow_bits": I, "per_flow_source": S, "formula_bits": I,
    "table_entries": I, "artifact_sha256": S, "seconds": F, "epochs": I, "train_packets": I, "note": S,
    "hyper": S, "reference_mismatches": I, "lost": I, "leaves": I, "nodes": I, "threshold": F, "seed": I}

ALL: tuple[TableSchema, ...] = tuple(v for v in list(globals().values()) if isinstance(v, TableSchema))

BY_NAME: dict[str, TableSchema] = {t.name: t for t in ALL}
