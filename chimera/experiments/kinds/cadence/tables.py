"""The tidy tables a cadence run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.experiments.kinds.stability.tables import STABILITY_BINS
from chimera.formats.tables import REPLAY_COLUMNS, B, F, I, S, TableSchema, _cols

CADENCE = TableSchema("cadence.csv", _cols(
    {"eta": F, "eta_of": S, "eta_effective": F, "t_cp_s": F, "memory_depth_pkts": F, "memory_depth_sim_s": F,
     "memory_epochs": F,
     "install_p50_ms": F, "install_simulated": B, "budget_ratio": F, "installs": I, "churn_per_install": F,
     "churn_per_sim_hour": F, "f1_mean": F, "f1_last": F, "oscillations": I, "response_h": F, "label": S,
     "seeds": I, "f1_mean_lo": F, "f1_mean_hi": F, "diff_vs_static_map": F, "diff_vs_static_map_lo": F,
     "diff_vs_static_map_hi": F},
    REPLAY_COLUMNS), keys=("eta", "t_cp_s"), open_columns=True, metrics=("f1_mean", "f1_last"))
CADENCE_BINS = TableSchema("cadence_bins.csv", _cols(STABILITY_BINS.columns, eta=F, t_cp_s=F),
                           keys=("configuration", "eta", "t_cp_s", "seed", "bin"),
                           doc="per training seed: each cell's bins, and Static-Map's (eta, T_cp empty)")
KAPPA = TableSchema("kappa.csv", {"kappa": F, "agree": I, "cells": I, "predicted_stable": I}, keys=("kappa",))
