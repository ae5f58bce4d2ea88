"""The tidy tables a stability run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import REPLAY_COLUMNS, B, F, I, S, TableSchema, _cols

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
