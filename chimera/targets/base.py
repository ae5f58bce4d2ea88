"""The target contract: what every dataplane declares and returns.

A target is a class in ``chimera.targets.registry.TARGETS``. It says whether it
can run here (``unavailable_reason``), declares what it can do
(``capabilities``: kinds ask for these, never for attributes), and runs an
artifact over a packet table with the replay settings of *that call*. It is a
context manager: whatever it built (a testbed) is torn down on exit.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

import numpy as np

from chimera.controlplane.schedule import TraceControl
from chimera.data.pcap import PacketTable
from chimera.errors import ConfigError, ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.reference.pipeline import Verdicts
from chimera.testbed.outcome import ForwardingOutcome, PerPacketLatency, ReplayOutcome, SwitchCounters
from chimera.testbed.replay import ReplayConfig


class Capability(enum.Flag):
    """What a target can do, beyond classifying a packet table."""

    NONE = 0
    TESTBED = enum.auto()         # a switch in the Mininet topology: replay from h1, verdicts at h2
    SOFTWARE_HOST = enum.auto()   # the † path: s1 redirects through the software classifier host
    FORWARDING = enum.auto()      # plain forwarding on the same path (the throughput yardstick)
    LIVE_INSTALL = enum.auto()    # Map updates installed while traffic flows (the slow loop)
    REGISTER_READ = enum.auto()   # state registers readable (conformance compares them)
    TRACE_CLOCK = enum.auto()     # classifies on the trace-time shim's clock


@dataclass
class TargetResult:
    """One verdict per replayed packet, the switch's counters, and what the replay did."""

    verdicts: Verdicts
    counters: SwitchCounters | None        # None: the target could not read them (reported as unknown)
    outcome: ReplayOutcome | None = None   # None: classified in-process (the reference)
    latency: PerPacketLatency | None = None
    received: np.ndarray | None = None      # testbeds: which replayed frames came back with a verdict
    registers: dict[str, Any] | None = None  # the state registers as read after the run (where readable)

    @property
    def evictions(self) -> int | None:
        return None if self.counters is None else self.counters.evictions

    def columns(self) -> dict[str, Any]:
        """Table columns of this result (the outcome's, and the counters everyone has)."""
        out: dict[str, Any] = self.outcome.columns() if self.outcome else {}
        out["new_flows"] = None if self.counters is None else self.counters.new_flows
        return out


class CapabilityError(ConfigError):
    """A kind asked a target for something it cannot do."""


class Target(abc.ABC):
    """One dataplane. Subclasses set ``name``, ``capabilities`` and ``auto_rank`` and implement ``run``."""

    name: ClassVar[str]
    capabilities: ClassVar[Capability] = Capability.NONE
    #: ``--target auto`` takes the available target of the highest rank (None: never chosen automatically)
    auto_rank: ClassVar[int | None] = None

    @classmethod
    @abc.abstractmethod
    def unavailable_reason(cls) -> str | None:
        """Why this target cannot run here (naming what to install), or None."""

    @classmethod
    def install_hint(cls) -> str:
        return "run as root after scripts/bootstrap, or use --target reference"

    @classmethod
    def require_available(cls) -> None:
        why = cls.unavailable_reason()
        if why is not None:
            raise ToolMissingError(f"the {cls.name} target cannot run: {why}", cls.install_hint())

    @classmethod
    def can(cls, cap: Capability) -> bool:
        return bool(cls.capabilities & cap) and cap is not Capability.NONE

    def require(self, cap: Capability, what: str) -> None:
        if not self.can(cap):
            raise CapabilityError(f"{what} needs a target with {str(cap.name).lower().replace('_', ' ')}; "
                                  f"{self.name} has none", "choose another --target (see invoke --help run-experiment)")

    @abc.abstractmethod
    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
            control: TraceControl | None = None) -> TargetResult:
        """Verdicts of ``table`` with ``art`` loaded; ``replay``: this call's replay settings (its clock resolved);
        ``control``: the slow loop installs Map updates as the traffic flows (every version it made active is
        then in ``control.artifacts``)."""

    def run_software(self, model_json: Path, table: PacketTable, run_dir: Path, slug: str, *,
                     replay: ReplayConfig) -> TargetResult:
        """A † configuration through the software classifier host (Capability.SOFTWARE_HOST)."""
        self.require(Capability.SOFTWARE_HOST, "the software classifier host")
        raise NotImplementedError

    def run_forwarding(self, table: PacketTable, run_dir: Path, slug: str, *,
                       replay: ReplayConfig) -> ForwardingOutcome:
        """Plain forwarding on the same path (Capability.FORWARDING)."""
        self.require(Capability.FORWARDING, "plain forwarding")
        raise NotImplementedError

    def unsupported(self, art: Artifact) -> str | None:
        """Why this target cannot run the artifact, or None."""
        return None

    def limits(self) -> dict[str, int]:
        """Compiled-in maxima of the dataplane, by artifact constant ({}: none); checked before training."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {"target": self.name}

    def close(self) -> None:
        """Tear down whatever the target built."""

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def exceeded(constants: dict[str, int], limits: dict[str, int]) -> list[tuple[str, int, int]]:
    """(constant, planned value, limit) for every planned constant over its limit."""
    return [(k, v, limits[k]) for k, v in constants.items() if k in limits and v > limits[k]]
