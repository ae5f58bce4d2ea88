"""The tidy tables a stability run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import REPLAY_COLUMNS, B, F, I, S, TableSchema, _cols

# ------------------------------------------------------------------ stability and cadence
STABILITY = TableSchema("stability.csv", _cols(
    {"configuration": S, "f1_mean": F, "f1_worst_bin": F, "f1_first": F, "f1_last": F, "installs": I,
     "failed_installs": I, "churn_total": I, "churn_per_install": F, "install_p50_ms": F, "install_p99_ms": F,
     "install_simulated": B, "install_measured_p50_ms": F, "f1_drop": F, "budget_ratio": F, "budget_ratio_replay": F,
     "load_ms": F, "diff_vs_fast_only": F, "diff_vs_fast_only_lo": F, "diff_vs_fast_only_hi": F,
     "diff_vs_static_map": F, "diff_vs_static_map_lo": F, "diff_vs_static_map_hi": F, "seeds": I,
     "f1_mean_lo": F, "f1_mean_hi": F, "prior_error_mean": F, "prior_error_max": F, "prior_held_ticks": I,
     "days": I}, REPLAY_COLUMNS), keys=("configuration",), metrics=("f1_mean", "f1_last", "f1_first"),
    doc="one row per configuration a switch ran: F1s averaged over the training seeds, counters summed")
STABILITY_SEEDS = TableSchema("stability_seeds.csv", _cols(
    {"configuration": S, "seed": I, "day": I, "f1_mean": F, "f1_worst_bin": F, "f1_first": F, "f1_last": F, "installs": I,
     "failed_installs": I, "churn_total": I, "churn_per_install": F, "install_p50_ms": F, "install_p99_ms": F,
     "install_simulated": B, "install_measured_p50_ms": F, "f1_drop": F, "budget_ratio": F, "budget_ratio_replay": F,
     "load_ms": F, "target": S, "prior_error_mean": F, "prior_error_max": F, "prior_held_ticks": I}, REPLAY_COLUMNS),
    keys=("configuration", "seed"), metrics=("f1_mean",),
    doc="one row per configuration and training seed (and day realization, where several ran; the oracle's too)")
ORACLE = TableSchema("oracle.csv", {
    "configuration": S, "seeds": I, "days": I, "f1_mean": F, "f1_mean_lo": F, "f1_mean_hi": F, "f1_worst_bin": F,
    "f1_first": F, "f1_last": F, "f1_drop": F, "installs": I, "target": S}, keys=("configuration",), metrics=("f1_mean",),
    doc="the oracle (retrained on labelled recent traffic, on the reference): the ceiling, not a switch row")
DIFFERENCES = TableSchema("differences.csv", {
    "a": S, "b": S, "measures": S, "diff": F, "lo": F, "hi": F, "seeds": I, "days": I, "interval_over": S,
    "block_hours": F, "block_chosen": B, "verdict": S},
    keys=("a", "b"), metrics=("diff",),
    doc="mean F1 a - b after the training hours, paired per seed (and day) and bin; 95% interval over seeds and "
        "blocks (one day) or over the days' means (several)")
SENSITIVITY = TableSchema("block_sensitivity.csv", {
    "a": S, "b": S, "block_bins": I, "block_hours": F, "used": B, "diff": F, "lo": F, "hi": F, "verdict": S},
    keys=("a", "b", "block_bins"), doc="each difference's interval at other block lengths")
DRIFT = TableSchema("drift_bins.csv", {
    "bin": I, "t_mid_h": F, "packets": I, "in_training_hours": B, "covariate": F, "label": F, "concept": F},
    keys=("bin",), doc="Jensen-Shannon divergence (bits) of each bin from the training hours: p(x), p(y), p(x|y)")
DRIFT_KNOBS = TableSchema("drift_knobs.csv", {
    "knob": S, "setting": S, "covariate_last": F, "label_last": F, "concept_last": F, "covariate_floor": F,
    "label_floor": F, "concept_floor": F}, keys=("knob",),
    doc="each generator knob alone: mean divergence over the last hours, and over the training hours (floor)")
STABILITY_BINS = TableSchema("stability_bins.csv", {
    "configuration": S, "seed": I, "day": I, "bin": I, "t_start_h": F, "t_mid_h": F, "packets": I, "flows": I, "f1": F, "f1_lo": F,
    "f1_hi": F, "load_packets": I}, keys=("configuration", "seed", "bin"))
CONTROL = TableSchema("control.csv", {
    "step": I, "t_trace_s": F, "t_day_s": F, "version": I, "samples": I, "new_samples": I, "occupancy_shift": F,
    "delta": F, "decision": S, "installed_version": I, "install_ms": F, "install_simulated": B,
    "install_ms_measured": F, "entries_written": I, "churn": I, "churn_map": I, "churn_bins": I, "churn_prior": I,
    "prior_shift": F, "prior_estimate": S, "prior_clipped": I, "prior_em_iterations": I, "prior_em_converged": B,
    "prior_truth": S, "prior_error": F, "prior_held": I, "pseudo_verdicts": I, "pseudo_confident": I,
    "pseudo_gate": F, "pseudo_entries": I, "pseudo_shift": F, "churn_global": I, "propose_ms": F, "error": S,
    "configuration": S, "seed": I,
    "day": I,
    "eta": F, "t_cp_s": F}, keys=("configuration", "seed", "step"),
    doc="one row per slow-loop tick")
DIAGNOSIS = TableSchema("diagnosis.csv", {"slow_loop": S, "f1_mean": F, "f1_last": F, "installs": I},
                        keys=("slow_loop",), metrics=("f1_mean",))
