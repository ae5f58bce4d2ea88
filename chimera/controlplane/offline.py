"""The reference under a trace-clock control plane (chimera.controlplane.schedule): the golden model as a
``Segments`` backend, so the slow loop (or a fuzzer's script) runs on the reference exactly as on a switch
under the trace clock (chimera.targets.testbed: the replay of each range of frames, drained before the
registers are read, and a real install at the flip). Both run the same schedule, so a controlled run gives
the same verdicts at any pace and on every target; the install delay is the schedule's (simulated:
chimera.controlplane.config's ``reference_install_ms``), a switch's measured install time is recorded beside it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from chimera.controlplane.recluster import MapVersion, churn
from chimera.controlplane.schedule import Segments, TraceControl
from chimera.errors import TargetError
from chimera.formats.registers import Registers
from chimera.testbed.outcome import InstallReport
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import SwitchState, Verdicts, concat_verdicts, run_reference


class ReferenceSegments:
    """The reference as a Segments backend: each range of packets through the golden model."""

    def __init__(self, art: Artifact, table: PacketTable, ts_ns: np.ndarray) -> None:
        self.table, self.ts = table, ts_ns
        self.active = art
        self.state = SwitchState.for_artifact(art)
        self.parts: list[Verdicts] = []
        self.i = 0

    def run_until(self, j: int) -> None:
        v, self.state = run_reference(self.active, self.table.take(slice(self.i, j)), ts_ns=self.ts[self.i:j],
                                      state=self.state)
        self.parts.append(v)
        self.i = j

    def registers(self) -> Registers:
        return self.state.registers()

    def flip(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        """The reference holds whole versions: a failing install changes nothing (the old version stays)."""
        if fail_after is not None:
            raise TargetError(f"injected install failure after {fail_after} writes", "the old version stays active")
        rep = InstallReport(0.0, churn(MapVersion.of(self.active), MapVersion.of(art))["total"], simulated=True)
        self.active = art
        return rep


class ModelSwaps:
    """A TraceControl that replaces the whole model at given trace instants (the oracle's retraining): each
    swap starts the reference on a fresh switch state with the new model, as a reload does on a switch
    (flows restart their windows). ``models(i, t_ns)`` gives the i-th swap's model, built from what happened
    before ``t_ns``."""

    def __init__(self, at_ns: list[int], models: Callable[[int, int], Artifact]) -> None:
        self.at_ns, self.models = sorted(at_ns), models
        self.swapped: list[Artifact] = []
        self.artifacts: dict[int, Artifact] = {}  # whole models, not map versions: nothing to replay them against

    @property
    def enabled(self) -> bool:
        return bool(self.at_ns)

    def reset(self) -> None:
        self.swapped = []

    def drive(self, ts_ns: np.ndarray, base: Artifact, backend: Segments) -> list[InstallReport]:
        if not isinstance(backend, ReferenceSegments):
            raise TargetError("whole-model swaps run on the reference only", "run the oracle with run_controlled")
        ts = np.asarray(ts_ns, np.int64)
        for i, t in enumerate(self.at_ns):
            j = int(np.searchsorted(ts, t, side="left"))
            if j > backend.i:
                backend.run_until(j)
            art = self.models(i, t)
            backend.active, backend.state = art, SwitchState.for_artifact(art)
            self.swapped.append(art)
        if backend.i < ts.size:
            backend.run_until(ts.size)
        return []


def run_controlled(art: Artifact, table: PacketTable, control: TraceControl, ts_ns: np.ndarray | None = None,
                   ) -> tuple[Verdicts, SwitchState]:
    """Verdicts of ``table`` with ``control`` installing as it decides (the reference target's schedule)."""
    ts = table.ts_ns if ts_ns is None else np.asarray(ts_ns, np.int64)
    if len(table) == 0 or not control.enabled:
        return run_reference(art, table, ts_ns=ts)
    ref = ReferenceSegments(art, table, ts)
    control.drive(ts, art, ref)
    if not ref.parts:
        return run_reference(art, table.take(slice(0, 0)), ts_ns=ts[:0], state=ref.state)
    return concat_verdicts(ref.parts), ref.state
