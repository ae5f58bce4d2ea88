"""The target contract: what every dataplane returns, and the protocol the experiment runner drives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from chimera.controlplane.loop import SlowLoop
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import Verdicts


@dataclass
class TargetResult:
    """One verdict per replayed packet, the evictions the switch counted, and run details (loss, latency...)."""

    verdicts: Verdicts
    evictions: int | None  # None: the target could not read its counters (reported as unknown)
    extra: dict[str, Any] = field(default_factory=dict)
    latency_us: dict[str, np.ndarray] | None = None  # per replayed packet (testbed targets): switch_us, host_us


class Target(Protocol):
    name: str

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str,
            control: SlowLoop | None = None) -> TargetResult:
        """Verdicts of ``table`` with ``art`` loaded; ``control``: the slow loop installs Map updates as the
        traffic flows (every version it made active is then in ``control.artifacts``)."""
        ...

    def unsupported(self, art: Artifact) -> str | None: ...

    def limits(self) -> dict[str, int]:
        """Compiled-in maxima of the dataplane, by artifact constant ({}: none); checked before training."""
        ...

    def describe(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def exceeded(constants: dict[str, int], limits: dict[str, int]) -> list[tuple[str, int, int]]:
    """(constant, planned value, limit) for every planned constant over its limit."""
    return [(k, v, limits[k]) for k, v in constants.items() if k in limits and v > limits[k]]
