"""The tidy tables a pseudo_grid run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.experiments.kinds.stability.tables import STABILITY_SEEDS
from chimera.formats.tables import REPLAY_COLUMNS, B, F, I, S, TableSchema, _cols

GRID = TableSchema("pseudo_grid.csv", _cols(
    {"arm": S, "control": S, "gate_quantile": F, "max_entries": I, "default": B, "f1_mean": F, "f1_mean_lo": F,
     "f1_mean_hi": F, "diff": F, "lo": F, "hi": F, "units": I, "days": I, "block_hours": F, "installs": I,
     "churn_total": I, "churn_per_install": F, "chosen": B, "at_edge": S, "edge_binds": B},
    REPLAY_COLUMNS), keys=("arm", "gate_quantile", "max_entries"), open_columns=True, metrics=("diff", "f1_mean"),
    doc="one row per arm and cell: its mean F1 after the training hours and its difference from the arm's control, "
        "paired per training seed, day and time bin (95% interval over the days' means); the validation run marks "
        "the chosen cell per arm")
UNITS = TableSchema("pseudo_grid_units.csv", _cols(STABILITY_SEEDS.columns, gate_quantile=F, max_entries=I),
                    keys=("configuration", "gate_quantile", "max_entries", "day", "seed"), open_columns=True,
                    metrics=("f1_mean",), doc="per configuration, cell, day and training seed (controls: no cell)")
