"""The tidy tables a hyper_dim run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import METHOD_ROW, B, F, I, TableSchema, _cols

HYPER_DIM = TableSchema("hyper_dim.csv", _cols(
    METHOD_ROW, m=I, d_v=I, bits=I, operating_point=B, budget_bits=I, budget_ratio=F, over_budget=B,
    aggregated_state_kib=F), keys=("dataset", "m", "d_v", "bits"), open_columns=True, metrics=("f1",))
