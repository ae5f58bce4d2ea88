"""The toy kind's table."""

from __future__ import annotations

from chimera.formats.tables import F, I, S, TableSchema

COUNTS = TableSchema("toy_counts.csv", {"label": S, "packets": I, "share": F, "lost": I, "reference_mismatches": I,
                                        "register_mismatches": I}, keys=("label",), metrics=("share",))
