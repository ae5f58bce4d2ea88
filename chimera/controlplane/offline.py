"""The slow loop on the reference pipeline, offline, with a simulated install schedule.

The trace's timestamps are the clock: every T_cp (on the trace's clock) the loop
reads the reference's registers and decides; an install takes effect
``reference_install_ms`` later, at the first packet at or after that instant,
exactly as a flip between two packets does on a switch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chimera.controlplane.loop import InstallReport, SlowLoop
from chimera.controlplane.recluster import MapVersion, churn
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import SwitchState, Verdicts, concat_verdicts, run_reference


class ReferenceSwitch:
    """SwitchControl over the reference state: installs are queued and flipped by the caller."""

    def __init__(self, state: SwitchState, active: Artifact, install_s: float) -> None:
        self.state, self.active, self.install_s = state, active, install_s
        self.pending: Artifact | None = None

    def registers(self) -> dict[str, Any]:
        return self.state.registers()

    def install_map(self, art: Artifact) -> InstallReport:
        self.pending = art
        return InstallReport(self.install_s, churn(MapVersion.of(self.active), MapVersion.of(art))["total"])


def run_controlled(art: Artifact, table: PacketTable, loop: SlowLoop, ts_ns: np.ndarray | None = None,
                   ) -> tuple[Verdicts, SwitchState]:
    """Verdicts of ``table`` with the slow loop installing as it decides (the reference target's schedule)."""
    ts = table.ts_ns if ts_ns is None else np.asarray(ts_ns, np.int64)
    n = len(table)
    st = SwitchState.for_artifact(art)
    if n == 0 or not loop.cfg.enabled:
        return run_reference(art, table, ts_ns=ts, state=st)
    sw = ReferenceSwitch(st, art, loop.cfg.reference_install_ms / 1e3)
    period = max(1, int(round(loop.period_trace_s * 1e9)))
    delay = int(round(sw.install_s * 1e9))
    t0, last = int(ts[0]), int(ts[-1])
    parts: list[Verdicts] = []
    i, tick, pending = 0, t0 + period, None

    def upto(t: int) -> None:  # run every packet before instant t on the active tables
        nonlocal i, st
        j = int(np.searchsorted(ts, t, side="left")) if t <= last else n
        if j > i:
            v, st = run_reference(sw.active, table.take(slice(i, j)), ts_ns=ts[i:j], state=st)  # type: ignore[arg-type]
            parts.append(v)
            i = j

    while i < n:
        if pending is not None and pending[0] <= tick:
            upto(pending[0])
            sw.active, pending = pending[1], None
            continue
        upto(tick)
        if i >= n:
            break
        sw.state = st
        loop.run_step(sw, (tick - t0) / 1e9)
        if sw.pending is not None:
            pending, sw.pending = (tick + delay, sw.pending), None
        tick += period
        if tick > last and pending is None:
            upto(last + 1)
    return concat_verdicts(parts), st
