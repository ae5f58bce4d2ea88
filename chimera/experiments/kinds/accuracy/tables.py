"""The tidy tables a accuracy run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import METHOD_ROW, F, I, S, TableSchema

ACCURACY = TableSchema("accuracy.csv", METHOD_ROW, keys=("dataset", "method"), open_columns=True,
                       metrics=("f1", "precision", "recall"), doc="one row per dataset x method (Table 1)")
BOOT = TableSchema("boot.csv", {"dataset": S, "draw": I, "method": S, "f1": F}, keys=("dataset", "draw", "method"),
                   doc="each classification method's macro-F1 on the same resamples of the test flows (paired)")
