"""The tidy tables a latency run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import F, I, S, TableSchema

# ------------------------------------------------------------------ testbed measurements
LATENCY = TableSchema("latency.csv.gz", {"program": S, "path": S, "load": S, "pps": I, "repeat": I, "packet": I,
                                         "switch_us": F, "host_us": F},
                      keys=("program", "load", "repeat", "packet"), doc="every packet's latency, every trial")
LATENCY_SUMMARY = TableSchema("latency_summary.csv", {
    "program": S, "path": S, "load": S, "pps": I, "repeat": I, "order": I, "packets": I, "lost": I, "not_sent": I,
    "dropped_by_capture": I, "reference_mismatches": I, "sent_pps": F, "switch_pps": F, "switch_timed": I,
    "host_timed": I, "switch_p50_us": F,
    "switch_p90_us": F, "switch_p99_us": F, "host_p50_us": F, "host_p90_us": F, "host_p99_us": F,
    "switch_tail": F, "program_ns": F, "program_runs": I, "steal_share": F}, keys=("program", "load", "repeat"),
    metrics=("switch_p50_us", "host_p50_us"), doc="one row per trial (program, load, repeat); order: its place in "
    "its repeat's random order; switch_timed, host_timed: how many packets its "
    "switch and host percentiles rest on (a delivered packet has no host time where h1's capture dropped its send); "
    "switch_tail: p99 / p50 in the switch; program_ns: the program's own mean run time "
    "(ns per run, the kernel's BPF statistics); steal_share: the share of CPU time the hypervisor took over the "
    "trial (/proc/stat; chimera.testbed.steal), which slows every path alike")
LATENCY_COST = TableSchema("latency_cost.csv", {
    "load": S, "pps": I, "measure": S, "a": S, "b": S, "statistic": S, "estimate": F, "lo": F, "hi": F,
    "repeats": I}, keys=("load", "measure", "a", "b", "statistic"), metrics=("estimate",),
    doc="what path a costs over path b at one load: per repeat, a's value minus b's (difference) or over it "
    "(ratio), then their mean with a 95% percentile bootstrap interval over repeats (b empty: a's value itself)")
