"""The tidy tables a input_scale run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import METHOD_ROW, I, TableSchema, _cols

INPUT_SCALE = TableSchema("input_scale.csv", _cols(METHOD_ROW, window=I), keys=("dataset", "method", "window"),
                          open_columns=True, metrics=("f1",))
