"""The reference target: the bit-exact integer model, in-process (no root, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chimera.controlplane.loop import SlowLoop
from chimera.controlplane.offline import run_controlled
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import run_reference
from chimera.targets.base import TargetResult


class ReferenceTarget:
    name = "reference"

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str,
            control: SlowLoop | None = None) -> TargetResult:
        """The reference on the capture's clock; with ``control``, the slow loop on a simulated install
        schedule (chimera.controlplane.offline)."""
        v, st = run_reference(art, table) if control is None else run_controlled(art, table, control)
        return TargetResult(v, int(st.counters[0]), {"new_flows": int(st.counters[1])})

    def unsupported(self, art: Artifact) -> str | None:
        """The reference runs every artifact."""
        return None

    def limits(self) -> dict[str, int]:
        return {}

    def describe(self) -> dict[str, Any]:
        return {"target": "reference", "clock": "capture timestamps"}

    def close(self) -> None:
        """Nothing to tear down."""
