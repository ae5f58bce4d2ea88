"""The reference target: the bit-exact integer model, in-process (no root, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chimera.controlplane.schedule import TraceControl
from chimera.controlplane.offline import run_controlled
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import run_reference
from chimera import paths
from chimera.targets.base import Capability, MutantSource, Target, TargetResult
from chimera.testbed.outcome import SwitchCounters
from chimera.testbed.replay import ReplayConfig


class ReferenceTarget(Target):
    """Classifies on the capture's own timestamps (the trace's clock), in process."""

    name = "reference"
    title = "the reference"
    program = "the reference pipeline"
    label = "reference integer"
    capabilities = Capability.LIVE_INSTALL | Capability.REGISTER_READ | Capability.TRACE_CLOCK
    auto_rank = 0
    mutants = MutantSource(
        "reference", paths.PACKAGE / "reference" / "pipeline.py",
        (("# ---- the window token (step 3c)", "def unpack_sample"),
         ("def crc32_columns", "# --------------------------------------------------------------------------- "
                               "the argument groups"),
         ("def _bit_length(x)", "# --------------------------------------------------------------------------- "
                                "state and verdicts")),
        "python", ("tests/test_conformance.py", "tests/test_reference.py", "-k", "reference or oracle"))

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """The reference runs everywhere."""
        return None

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
            control: TraceControl | None = None) -> TargetResult:
        """The reference on the capture's clock; with ``control``, the slow loop on the trace-time schedule
        (chimera.controlplane.offline)."""
        v, st = run_reference(art, table) if control is None else run_controlled(art, table, control)
        return TargetResult(v, SwitchCounters.of(st.registers()["counters"]))

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
        return {"target": "reference", "clock": "the capture's timestamps (trace)"}
