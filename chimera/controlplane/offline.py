"""The slow loop on the trace's clock: one schedule for the reference and for a switch under the trace clock.

The trace's timestamps are the clock: every T_cp (trace time) the loop reads the
registers as they are after every packet before that instant and decides; an
install takes effect ``install_delay_ns`` later, at the first packet at or after
that instant, exactly as a flip between two packets does on a switch. Where the
packets run is a ``Segments`` backend:

- the reference (``ReferenceSegments``): the golden model on each range of packets;
- a switch under the trace clock (chimera.targets.testbed): the replay of each range
  of frames, drained before the registers are read, and a real install at the flip.

Both run this same schedule, so a controlled run gives the same verdicts at any
pace and on every target; the delay is the schedule's (simulated: chimera.controlplane
.config's ``reference_install_ms``), the switch's measured install time is recorded beside it.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from chimera.controlplane.loop import ControlStep, InstallReport, SlowLoop
from chimera.controlplane.recluster import MapVersion, churn
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import SwitchState, Verdicts, concat_verdicts, run_reference


class Segments(Protocol):
    """Where a controlled run's packets are classified."""

    def run_until(self, j: int) -> None:
        """Classify every packet before position j (from where the last call stopped) on the active tables."""
        ...

    def registers(self) -> dict[str, Any]: ...

    def flip(self, art: Artifact) -> InstallReport:
        """Install ``art``'s Map tables and make them active, between two packets."""
        ...


class _Deferred:
    """SwitchControl for the loop: an install is queued for the schedule to flip at its instant."""

    def __init__(self, backend: Segments, active: Artifact, delay_s: float) -> None:
        self.backend, self.active, self.delay_s = backend, active, delay_s
        self.pending: Artifact | None = None

    def registers(self) -> dict[str, Any]:
        return self.backend.registers()

    def install_map(self, art: Artifact) -> InstallReport:
        self.pending = art
        return InstallReport(self.delay_s, churn(MapVersion.of(self.active), MapVersion.of(art))["total"],
                             simulated=True)


def run_schedule(ts_ns: np.ndarray, base: Artifact, loop: SlowLoop, backend: Segments) -> list[InstallReport]:
    """Drive ``backend`` through the trace with the slow loop; returns the flips' install reports (as the backend
    measured them)."""
    ts = np.asarray(ts_ns, np.int64)
    n = ts.size
    installs: list[InstallReport] = []
    if n == 0:
        return installs
    sw = _Deferred(backend, base, loop.cfg.reference_install_ms / 1e3)
    period = max(1, int(round(loop.period_trace_s * 1e9)))
    delay = int(round(sw.delay_s * 1e9))
    t0, last = int(ts[0]), int(ts[-1])
    i, tick = 0, t0 + period
    pending: tuple[int, Artifact, ControlStep] | None = None

    def upto(t: int) -> None:  # every packet before instant t, on the active tables
        nonlocal i
        j = int(np.searchsorted(ts, t, side="left")) if t <= last else n
        if j > i:
            backend.run_until(j)
            i = j

    while i < n:
        if pending is not None and pending[0] <= tick:
            upto(pending[0])
            rep = backend.flip(pending[1])
            installs.append(rep)
            if not rep.simulated:
                pending[2].install_ms_measured = rep.seconds * 1e3
            sw.active, pending = pending[1], None
            continue
        upto(tick)
        if i >= n:
            break
        step = loop.run_step(sw, (tick - t0) / 1e9)
        if sw.pending is not None:
            pending, sw.pending = (tick + delay, sw.pending, step), None
        tick += period
        if tick > last and pending is None:
            upto(last + 1)
    return installs


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

    def registers(self) -> dict[str, Any]:
        return self.state.registers()

    def flip(self, art: Artifact) -> InstallReport:
        rep = InstallReport(0.0, churn(MapVersion.of(self.active), MapVersion.of(art))["total"], simulated=True)
        self.active = art
        return rep


def run_controlled(art: Artifact, table: PacketTable, loop: SlowLoop, ts_ns: np.ndarray | None = None,
                   ) -> tuple[Verdicts, SwitchState]:
    """Verdicts of ``table`` with the slow loop installing as it decides (the reference target's schedule)."""
    ts = table.ts_ns if ts_ns is None else np.asarray(ts_ns, np.int64)
    if len(table) == 0 or not loop.cfg.enabled:
        return run_reference(art, table, ts_ns=ts)
    ref = ReferenceSegments(art, table, ts)
    run_schedule(ts, art, loop, ref)
    return concat_verdicts(ref.parts), ref.state
