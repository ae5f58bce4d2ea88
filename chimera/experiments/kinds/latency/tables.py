"""The tidy tables a latency run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import F, I, S, TableSchema

# ------------------------------------------------------------------ testbed measurements
LATENCY = TableSchema("latency.csv.gz", {"path": S, "load": S, "pps": I, "packet": I, "switch_us": F, "host_us": F},
                      keys=("path", "load", "packet"), doc="every packet's latency")
LATENCY_SUMMARY = TableSchema("latency_summary.csv", {
    "path": S, "load": S, "pps": I, "packets": I, "lost": I, "not_sent": I, "dropped_by_capture": I,
    "reference_mismatches": I, "sent_pps": F, "switch_pps": F, "switch_p50_us": F, "switch_p90_us": F,
    "switch_p99_us": F, "host_p50_us": F, "host_p90_us": F, "host_p99_us": F}, keys=("path", "load"),
    metrics=("switch_p50_us", "host_p50_us"))
