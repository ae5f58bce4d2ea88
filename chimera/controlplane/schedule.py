"""Control on the trace's clock: where the packets run (``Segments``), what drives them (``TraceControl``), and
the fuzzer's scripted installs.

A ``TraceControl`` walks a replay on the trace's timeline: it classifies ranges of packets on a ``Segments``
backend (the reference, or a switch under the trace clock) and installs Map versions between two packets. The
slow loop (chimera.controlplane.loop.SlowLoop) decides from the registers every T_cp of trace time;
``ScriptedInstalls`` installs given versions before given packets, some of them failing on purpose (fault
injection: the switch writes part of the version, then the write fails, and the old version must stay active).
Every target runs the same control, so their verdicts can be compared packet for packet.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.formats.registers import Registers
from chimera.testbed.outcome import InstallReport

log = logging.getLogger(__name__)


class Segments(Protocol):
    """Where a controlled run's packets are classified."""

    def run_until(self, j: int) -> None:
        """Classify every packet before position j (from where the last call stopped) on the active tables."""
        ...

    def registers(self) -> Registers: ...

    def flip(self, art: Artifact, fail_after: int | None = None) -> InstallReport:
        """Install ``art``'s Map tables and make them active, between two packets; with ``fail_after``, fail
        (TargetError) after that many writes, before the flip, leaving the active version as it was."""
        ...


class TraceControl(Protocol):
    """A control plane that runs on the trace's clock."""

    artifacts: dict[int, Artifact]   # every map version it made active (conformance replays them)

    @property
    def enabled(self) -> bool: ...

    def drive(self, ts_ns: np.ndarray, base: Artifact, backend: Segments) -> list[InstallReport]:
        """Classify every packet on ``backend``, installing as it decides; returns the installs' reports."""
        ...

    def reset(self) -> None:
        """Forget every decision: a replay that starts over from a clean switch."""
        ...


@dataclass(frozen=True)
class ScriptedInstall:
    """One install of the script: ``art`` (its MAP_VERSION unique in the script) before packet ``before``."""

    before: int
    art: Artifact
    fail_after: int | None = None   # fault injection: fail after this many writes (0: before any)

    @property
    def version(self) -> int:
        return self.art.c("MAP_VERSION")


@dataclass
class ScriptedInstalls:
    """Installs at given packet positions, in order; a failing one must leave the active version in place."""

    base: Artifact
    script: list[ScriptedInstall]
    artifacts: dict[int, Artifact] = field(init=False)
    outcomes: list[str] = field(init=False)   # per install: "installed" | "failed"

    def __post_init__(self) -> None:
        versions = [self.base.c("MAP_VERSION"), *(s.version for s in self.script)]
        if len(set(versions)) != len(versions):
            raise TargetError(f"scripted installs reuse map versions {versions}", "give every version its own number")
        self.reset()

    @property
    def enabled(self) -> bool:
        return True

    def reset(self) -> None:
        self.artifacts = {self.base.c("MAP_VERSION"): self.base}
        self.outcomes = []

    def drive(self, ts_ns: np.ndarray, base: Artifact, backend: Segments) -> list[InstallReport]:
        reports: list[InstallReport] = []
        for s in sorted(self.script, key=lambda s: s.before):
            backend.run_until(min(s.before, len(ts_ns)))
            try:
                rep = backend.flip(s.art, s.fail_after)
            except TargetError as e:
                if s.fail_after is None:
                    raise
                log.debug("scripted install of version %d failed as injected: %s", s.version, e.problem)
                self.outcomes.append("failed")
                continue
            if s.fail_after is not None:
                raise TargetError(f"the install of map version {s.version} was to fail after {s.fail_after} writes "
                                  "and did not", "the target ignores fault injection: a harness bug")
            self.outcomes.append("installed")
            self.artifacts[s.version] = s.art
            reports.append(rep)
        backend.run_until(len(ts_ns))
        return reports
