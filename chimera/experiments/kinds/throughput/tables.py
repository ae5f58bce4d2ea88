"""The tidy tables a throughput run writes: one typed row class each, its schema derived from it
(chimera.formats.rows)."""

from __future__ import annotations

from dataclasses import dataclass

from chimera.formats.rows import schema_of


@dataclass(frozen=True)
class ThroughputRow:
    """One path at one frame size, replayed at top speed: what it delivered (empty: not measured)."""
    path: str
    frame: str
    mean_frame_bytes: float
    replayed: int | None
    verdicts: int | None
    not_sent: int | None
    dropped_by_capture: int | None
    lost: int | None
    offered_pps: float | None
    delivered_pps: float | None
    delivered_gbps: float | None
    reference_mismatches: int | None


@dataclass(frozen=True)
class LadderRow:
    """One fixed rate of the 0-loss ladder on the switch path."""
    pps: int
    offered_pps: float | None
    lost: int | None
    dropped_by_capture: int | None
    reference_mismatches: int | None


THROUGHPUT = schema_of(ThroughputRow, "throughput.csv", keys=("path", "frame"), metrics=("delivered_pps",))
LADDER = schema_of(LadderRow, "ladder.csv", keys=("pps",))
