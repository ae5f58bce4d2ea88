"""The tidy tables a accuracy run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import METHOD_ROW, TableSchema

ACCURACY = TableSchema("accuracy.csv", METHOD_ROW, keys=("dataset", "method"), open_columns=True,
                       metrics=("f1", "precision", "recall"), doc="one row per dataset x method (Table 1)")
