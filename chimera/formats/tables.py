"""The tidy tables of a run directory: each one's file name, columns (with types) and key columns, once.

A kind declares which of these it writes (chimera.experiments.kinds); the kinds
write them, the reports, ``invoke compare``, the sweep merge and the nightly
read them, all through these objects, so a renamed column or file is one edit
and a typo fails where it is written. ``open_columns`` tables may carry
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
    "dropped_by_capture": I, "lost": I, "foreign_frames": I, "unmarked_frames": I, "reference_mismatches": I,
    "register_mismatches": I, "conformance_checked": I, "install_ms": F, "latency_switch_p50_us": F,
    "latency_switch_p99_us": F, "latency_host_p50_us": F, "latency_host_p99_us": F, "sent_pps": F, "switch_pps": F,
    "recv_pps": F, "new_flows": I}
SUMMARY_METRICS: dict[str, Dtype] = {"macro_precision": F, "macro_recall": F, "macro_f1": F, "accuracy": F,
                                     "packets": I}

# ------------------------------------------------------------------ variants (quickstart, ablation)
ABLATION = TableSchema("ablation.csv", _cols(
    {"group": S, "variant": S, "software_only": B, "attention": S, "keys": S, "aggregation": S, "fusion": S,
     "fusion_fallback": S, "beta": F, "val_f1_nn": F, "executed_on": S, "target_fallback": S, "runs_on_switch": B,
     "row_note": S, "bits_per_flow": I, "table_entries": I, "table_kbits": F, "float_int_agreement": F,
     "hard_vetoes": I, "hard_rule_hits": I, "soft_rule_packets": I, "evictions": I, "unparsed": I, "new_flows": I,
     "artifact_sha256": S, "offline_agreement": F},
    SUMMARY_METRICS, REPLAY_COLUMNS), keys=("variant",), metrics=("macro_f1", "macro_precision", "macro_recall",
                                                                   "accuracy"),
    doc="one row per variant: where it ran, its size, its scores and (testbed) its replay")
METRICS = TableSchema("metrics.csv", {"variant": S, "metric": S, "value": F}, keys=("variant", "metric"),
                      doc="ablation.csv's metrics in long form")
PER_CLASS = TableSchema("per_class.csv", {"variant": S, "class": S, "precision": F, "recall": F, "f1": F, "support": I},
                        keys=("variant", "class"), metrics=("f1",))
CONFUSION = TableSchema("confusion.csv", {"true": S, "pred": S, "count": I, "variant": S},
                        keys=("variant", "true", "pred"))
FLOWS = TableSchema("flows.csv", {"flow": I, "label": I, "packets": I, "majority_pred": I, "packet_accuracy": F},
                    keys=("flow",), doc="the first switch variant, per flow")
PACKETS = TableSchema("packets.csv.gz", {"row": I, "flow": I, "label": I, "pred": I, "flags": I, "score": I,
                                         "centroid": I}, keys=("row",), doc="the first switch variant, per test packet")

# ------------------------------------------------------------------ stability and cadence
STABILITY = TableSchema("stability.csv", _cols(
    {"configuration": S, "f1_mean": F, "f1_worst_bin": F, "f1_first": F, "f1_last": F, "installs": I,
     "failed_installs": I, "churn_total": I, "churn_per_install": F, "install_p50_ms": F, "install_p99_ms": F,
     "install_simulated": B, "install_measured_p50_ms": F, "f1_drop": F, "budget_ratio": F, "budget_ratio_replay": F,
     "load_ms": F, "diff_vs_fast_only": F, "diff_vs_fast_only_lo": F, "diff_vs_fast_only_hi": F,
     "diff_vs_static_map": F, "diff_vs_static_map_lo": F, "diff_vs_static_map_hi": F},
    REPLAY_COLUMNS), keys=("configuration",), metrics=("f1_mean", "f1_last", "f1_first"))
STABILITY_BINS = TableSchema("stability_bins.csv", {
    "configuration": S, "bin": I, "t_start_h": F, "t_mid_h": F, "packets": I, "flows": I, "f1": F, "f1_lo": F,
    "f1_hi": F, "load_packets": I}, keys=("configuration", "bin"))
CONTROL = TableSchema("control.csv", {
    "step": I, "t_trace_s": F, "t_day_s": F, "version": I, "samples": I, "new_samples": I, "occupancy_shift": F,
    "delta": F, "decision": S, "installed_version": I, "install_ms": F, "install_simulated": B,
    "install_ms_measured": F, "entries_written": I, "churn": I, "churn_map": I, "churn_bins": I, "propose_ms": F,
    "error": S, "configuration": S, "eta": F, "t_cp_s": F}, keys=("configuration", "step"),
    doc="one row per slow-loop tick")
DIAGNOSIS = TableSchema("diagnosis.csv", {"slow_loop": S, "f1_mean": F, "f1_last": F, "installs": I},
                        keys=("slow_loop",), metrics=("f1_mean",))
CADENCE = TableSchema("cadence.csv", _cols(
    {"eta": F, "eta_effective": F, "t_cp_s": F, "memory_depth_pkts": F, "memory_depth_sim_s": F,
     "install_p50_ms": F, "install_simulated": B, "budget_ratio": F, "installs": I, "churn_per_install": F,
     "churn_per_sim_hour": F, "f1_mean": F, "f1_last": F, "oscillations": I, "response_h": F, "label": S},
    REPLAY_COLUMNS), keys=("eta", "t_cp_s"), open_columns=True, metrics=("f1_mean", "f1_last"))
CADENCE_BINS = TableSchema("cadence_bins.csv", _cols(STABILITY_BINS.columns, eta=F, t_cp_s=F),
                           keys=("eta", "t_cp_s", "bin"))
KAPPA = TableSchema("kappa.csv", {"kappa": F, "agree": I, "cells": I, "predicted_stable": I}, keys=("kappa",))

# ------------------------------------------------------------------ the yardstick kinds
METHOD_ROW: dict[str, Dtype] = {
    "dataset": S, "method": S, "where": S, "kind": S, "task": S, "precision": F, "recall": F, "f1": F, "accuracy": F,
    "input_bits": I, "input_fields": S, "model_kbits": F, "per_flow_bits": I, "per_flow_source": S, "formula_bits": I,
    "table_entries": I, "artifact_sha256": S, "seconds": F, "epochs": I, "train_packets": I, "note": S,
    "hyper": S, "reference_mismatches": I, "lost": I, "leaves": I, "nodes": I, "threshold": F, "seed": I}
ACCURACY = TableSchema("accuracy.csv", METHOD_ROW, keys=("dataset", "method"), open_columns=True,
                       metrics=("f1", "precision", "recall"), doc="one row per dataset x method (Table 1)")
RESOURCES = TableSchema("resources.csv", {
    "method": S, "where": S, "per_flow_bits": I, "per_flow_source": S, "table_entries": I, "exact_bits": I,
    "ternary_range_bits": I, "action_data_bits": I, "model_kbits": F, "formula_bits": I, "budget_bits": I,
    "budget_ratio": F}, keys=("method", "where"), metrics=("per_flow_bits",))
CHIMERA_TABLES = TableSchema("chimera_tables.csv", {"table": S, "entries": I, "entry_bits": I, "bits": I, "match": S,
                                                    "key_bits": I, "kind": S}, keys=("table",), open_columns=True)
EBPF_MAPS = TableSchema("ebpf_maps.csv", {"name": S, "type": I, "key_size": I, "value_size": I, "max_entries": I,
                                          "per_flow": B, "bits": I}, keys=("name",), open_columns=True)
P4_REGISTERS = TableSchema("p4_registers.csv", {"name": S, "bitwidth": I, "size": I, "per_flow": B, "bits": I},
                           keys=("name",), open_columns=True)
P4_TABLES = TableSchema("p4_tables.csv", {"table": S, "size": I, "match": S}, keys=("table",), open_columns=True)
INPUT_SCALE = TableSchema("input_scale.csv", _cols(METHOD_ROW, window=I), keys=("dataset", "method", "window"),
                          open_columns=True, metrics=("f1",))
HYPER_DIM = TableSchema("hyper_dim.csv", _cols(
    METHOD_ROW, m=I, d_v=I, bits=I, operating_point=B, budget_bits=I, budget_ratio=F, over_budget=B,
    aggregated_state_kib=F), keys=("dataset", "m", "d_v", "bits"), open_columns=True, metrics=("f1",))
ROC = TableSchema("roc.csv", {"dataset": S, "detector": S, "where": S, "auc": F, "model_kbits": F, "test_packets": I,
                              "attack_packets": I, "benign_train_packets": I}, keys=("dataset", "detector"),
                  metrics=("auc",))
ROC_CURVES = TableSchema("roc_curves.csv", {"fpr": F, "tpr": F, "dataset": S, "detector": S},
                         keys=("dataset", "detector"))

# ------------------------------------------------------------------ testbed measurements
LATENCY = TableSchema("latency.csv.gz", {"path": S, "load": S, "pps": I, "packet": I, "switch_us": F, "host_us": F},
                      keys=("path", "load", "packet"), doc="every packet's latency")
LATENCY_SUMMARY = TableSchema("latency_summary.csv", {
    "path": S, "load": S, "pps": I, "packets": I, "lost": I, "not_sent": I, "dropped_by_capture": I,
    "reference_mismatches": I, "sent_pps": F, "switch_pps": F, "switch_p50_us": F, "switch_p90_us": F,
    "switch_p99_us": F, "host_p50_us": F, "host_p90_us": F, "host_p99_us": F}, keys=("path", "load"),
    metrics=("switch_p50_us", "host_p50_us"))
THROUGHPUT = TableSchema("throughput.csv", {
    "path": S, "frame": S, "mean_frame_bytes": F, "replayed": I, "verdicts": I, "not_sent": I,
    "dropped_by_capture": I, "lost": I, "offered_pps": F, "delivered_pps": F, "delivered_gbps": F,
    "reference_mismatches": I}, keys=("path", "frame"), metrics=("delivered_pps",))
LADDER = TableSchema("ladder.csv", {"pps": I, "offered_pps": F, "lost": I, "dropped_by_capture": I,
                                    "reference_mismatches": I}, keys=("pps",))

ALL: tuple[TableSchema, ...] = tuple(v for v in list(globals().values()) if isinstance(v, TableSchema))
BY_NAME: dict[str, TableSchema] = {t.name: t for t in ALL}
