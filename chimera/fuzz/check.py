"""What each implementation made of a batch (``Observation``), and where two of them differ (``Difference``).

Three kinds of implementation observe a batch: the reference (chimera.reference, under the batch's scripted
installs), the independent oracle (chimera.fuzz.oracle, one packet at a time) and each testbed target (a real
replay on the trace clock, frames sent as built, the dataplane built with its coverage counters). All of them
run on the trace time the shim carries (capture time less the batch's origin), so they must agree on every
verdict field, every state register, the counters, and (reference and testbeds) the decision-point coverage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chimera.controlplane.offline import run_controlled
from chimera.controlplane.schedule import ScriptedInstalls
from chimera.data.pcap import PacketTable
from chimera.formats import coverage as cov
from chimera.formats import shim
from chimera.formats.artifact import Artifact
from chimera.formats.registers import STATE_REGISTERS, Registers
from chimera.formats.verdict import VerdictFlag
from chimera.fuzz.oracle import Oracle, rows_of
from chimera.targets.base import Target
from chimera.testbed.replay import ReplayConfig
from chimera.targets.registry import TRUTH

FIELDS = ("label", "flags", "score", "rule_id", "centroid", "map_version")
COUNTERS = ("evictions", "new_flows", "parsed", "unparsed")
#: the verdict flag that says what the frame carried (the shim), not what the pipeline computed
TRACE_CLOCK_FLAG = int(VerdictFlag.TRACE_CLOCK)
#: control-plane points counted from a target's verdicts and its installs (beside chimera.formats.coverage)
CONTROL_POINTS = ("install_flip", "install_failed")


def trace_clock(ts_ns: np.ndarray) -> np.ndarray:
    """The clock every implementation classifies on: the shim's trace time (chimera.formats.shim)."""
    ts = np.asarray(ts_ns, np.int64)
    return ts - shim.trace_origin(ts)


@dataclass
class Observation:
    """One implementation's verdicts (``FIELDS`` per frame; -1 where no verdict came back), registers, installs."""

    target: str
    verdicts: np.ndarray              # [N, len(FIELDS)] int64
    received: np.ndarray              # bool [N]
    registers: Registers
    installs: list[str] = field(default_factory=list)   # per scripted install: installed | failed
    has_coverage: bool = True

    def coverage(self) -> dict[str, int]:
        """Decision points taken: the pipeline's counters, and the control plane's from the verdicts."""
        out = cov.as_dict(list(self.registers.get("coverage", [0] * cov.N_POINTS))) if self.has_coverage else {}
        mv = self.verdicts[self.received, FIELDS.index("map_version")]
        out["install_flip"] = int(np.sum(mv[1:] != mv[:-1])) if mv.size > 1 else 0
        out["install_failed"] = self.installs.count("failed")
        return out


@dataclass(frozen=True)
class Difference:
    """Where ``target`` disagrees with ``against`` on a batch (the first frame, and how many)."""

    target: str
    against: str
    kind: str                 # verdict | register | counter | lost | install | error
    field: str
    frame: int | None = None  # the first differing frame of the batch
    got: Any = None
    want: Any = None
    count: int = 1

    def describe(self) -> str:
        where = f" at frame {self.frame}" if self.frame is not None else ""
        return (f"{self.target} vs {self.against}: {self.kind} '{self.field}'{where}: {self.got!r} != {self.want!r}"
                f" ({self.count} differ)")

    def signature(self) -> tuple[str, str, str]:
        return self.target, self.kind, self.field


def _regs_of(raw: Registers) -> Registers:
    out: Registers = {"counters": {k: int(v) for k, v in (raw.get("counters") or {}).items() if k in COUNTERS}}
    for k in STATE_REGISTERS:
        if k in raw:
            out[k] = raw[k]
    return out


def compare(want: Observation, got: Observation) -> list[Difference]:
    """Every way ``got`` differs from ``want``: the first frame per verdict field, each register, each counter,
    frames without a verdict, the installs' outcomes."""
    diffs: list[Difference] = []
    rows = got.received & want.received
    lost = np.flatnonzero(want.received & ~got.received)
    if lost.size:
        diffs.append(Difference(got.target, want.target, "lost", "verdict", int(lost[0]), None, "a verdict",
                                int(lost.size)))
    for j, name in enumerate(FIELDS):
        a, b = got.verdicts[rows, j], want.verdicts[rows, j]
        if name == "flags":
            a, b = a & ~TRACE_CLOCK_FLAG, b & ~TRACE_CLOCK_FLAG
        bad = np.flatnonzero(a != b)
        if bad.size:
            i = int(np.flatnonzero(rows)[bad[0]])
            diffs.append(Difference(got.target, want.target, "verdict", name, i, int(a[bad[0]]), int(b[bad[0]]),
                                    int(bad.size)))
    for name in STATE_REGISTERS:
        if name not in got.registers or name not in want.registers:
            continue
        a, b = np.atleast_1d(np.asarray(got.registers[name])), np.atleast_1d(np.asarray(want.registers[name]))
        n = min(a.size, b.size)
        bad = np.flatnonzero(a[:n] != b[:n])
        if bad.size or a.size != b.size:
            k = int(bad[0]) if bad.size else n
            label = f"{name}[{cov.POINTS[k].name}]" if name == "coverage" and k < cov.N_POINTS else f"{name}[{k}]"
            diffs.append(Difference(got.target, want.target, "register", label, None,
                                    a[k].item() if k < a.size else None, b[k].item() if k < b.size else None,
                                    int(bad.size) + abs(a.size - b.size)))
    for name in COUNTERS:
        a, b = got.registers.get("counters", {}).get(name), want.registers.get("counters", {}).get(name)
        if a is not None and b is not None and a != b:
            diffs.append(Difference(got.target, want.target, "counter", name, None, a, b))
    if got.installs and want.installs and got.installs != want.installs:
        diffs.append(Difference(got.target, want.target, "install", "outcomes", None, got.installs, want.installs))
    return diffs


def observe_reference(base: Artifact, table: PacketTable, ts_ns: np.ndarray, script: ScriptedInstalls) -> Observation:
    script.reset()
    v, state = run_controlled(base, table, script, ts_ns=trace_clock(ts_ns))
    verdicts = np.column_stack([getattr(v, f).astype(np.int64) for f in FIELDS]) if len(v) else \
        np.zeros((0, len(FIELDS)), np.int64)
    regs = _regs_of(state.registers())
    return Observation(TRUTH, verdicts, np.ones(len(v), bool), regs, list(script.outcomes))


def observe_oracle(base: Artifact, table: PacketTable, ts_ns: np.ndarray, script: ScriptedInstalls) -> Observation:
    """The oracle, installing the script's versions before their packets (a failing one installs nothing)."""
    o = Oracle(base)
    at: dict[int, list[Any]] = {}
    for s in script.script:
        at.setdefault(s.before, []).append(s)
    outcomes: list[str] = []
    rows = rows_of(table, trace_clock(ts_ns))
    out = np.zeros((len(rows), len(FIELDS)), np.int64)
    for i in range(len(rows) + 1):
        for s in at.get(i, []):
            if s.fail_after is None:
                o.install(s.art)
            outcomes.append("installed" if s.fail_after is None else "failed")
        if i < len(rows):
            out[i, :5] = o.step(rows[i])
            out[i, 5] = o.version
    return Observation("oracle", out, np.ones(len(rows), bool), _regs_of(o.registers()), outcomes,
                       has_coverage=False)


def observe_target(target: Target, base: Artifact, table: PacketTable, script: ScriptedInstalls, work: Path,
                   slug: str, pps: int | None = None) -> Observation:
    """A testbed target's replay of the batch on the trace clock, frames as built."""
    script.reset()
    replay = ReplayConfig(clock="trace", frames="as-captured", pps=pps, mode="pps" if pps else "auto")
    res = target.run(base, table, work, slug, replay=replay, control=script)
    v = res.verdicts
    verdicts = np.column_stack([getattr(v, f).astype(np.int64) for f in FIELDS])
    received = res.received if res.received is not None else np.ones(len(v), bool)
    verdicts[~received] = -1
    return Observation(target.name, verdicts, received, _regs_of(res.registers or {}), list(script.outcomes),
                       has_coverage="coverage" in (res.registers or {}))
