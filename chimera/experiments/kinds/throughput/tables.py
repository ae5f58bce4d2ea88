"""The tidy tables a throughput run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import F, I, S, TableSchema

THROUGHPUT = TableSchema("throughput.csv", {
    "path": S, "frame": S, "mean_frame_bytes": F, "replayed": I, "verdicts": I, "not_sent": I,
    "dropped_by_capture": I, "lost": I, "offered_pps": F, "delivered_pps": F, "delivered_gbps": F,
    "reference_mismatches": I}, keys=("path", "frame"), metrics=("delivered_pps",))
LADDER = TableSchema("ladder.csv", {"pps": I, "offered_pps": F, "lost": I, "dropped_by_capture": I,
                                    "reference_mismatches": I}, keys=("pps",))
