"""The target contract: what every dataplane declares and returns.

A target is a class in ``chimera.targets.registry.TARGETS``, and that class is
its whole record: everything the rest of the harness knows of a target it reads
here, never from a name. The record says whether the target can run here
(``unavailable_reason``), what it can do (``capabilities``: kinds ask for these,
never for attributes), its row label, the tools whose versions a run records,
the clocks it classifies on, the rate its conformance tests replay at, how its
program is built (``build_program``), the source its mutants are drawn from
(``mutants``) and the goals its benches hold it to (``bench``). It runs an
artifact over a packet table with the replay settings of *that call*, and it is
a context manager: whatever it built (a testbed) is torn down on exit.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal

import numpy as np

from chimera.controlplane.schedule import TraceControl
from chimera.data.pcap import PacketTable
from chimera.errors import ConfigError, ToolMissingError
from chimera.formats.artifact import Artifact
from chimera.formats.registers import Registers
from chimera.formats.rows import Cells
from chimera.reference.pipeline import Verdicts
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.outcome import (Accounting, ForwardingOutcome, PerPacketLatency, ProgramTime, ReplayOutcome,
                                     SwitchCounters)
from chimera.testbed.replay import Clock, ReplayConfig


class Capability(enum.Flag):
    """What a target can do, beyond classifying a packet table."""

    NONE = 0
    TESTBED = enum.auto()         # a switch in the Mininet topology: replay from h1, verdicts at h2
    SOFTWARE_HOST = enum.auto()   # the † path: s1 redirects through the software classifier host
    FORWARDING = enum.auto()      # plain forwarding on the same path (the throughput yardstick)
    LIVE_INSTALL = enum.auto()    # Map updates installed while traffic flows (the slow loop)
    REGISTER_READ = enum.auto()   # state registers readable (conformance compares them)
    TRACE_CLOCK = enum.auto()     # classifies on the trace-time shim's clock
    BASELINES = enum.auto()       # the same path with programs doing part of the work (times what the rest costs)


@dataclass(frozen=True)
class MutantSource:
    """The source a target's mutants are drawn from (``invoke mutate --files <name>``)."""

    name: str                                # what --files calls it (and the prefix of its mutant ids)
    path: Path
    #: (first line containing, last line containing): the pipeline steps; nothing outside them is mutated
    regions: tuple[tuple[str, str], ...]
    syntax: Literal["python", "c", "p4"]     # how comments, strings and statements look in it
    #: the conformance tests a mutant the fuzzer did not kill faces (pytest arguments, from the repository root)
    tests: tuple[str, ...]
    #: a mutant switch replays at this fixed rate (no per-mutant calibration); None: classified in process
    pps: int | None = None


@dataclass(frozen=True)
class BenchProfile:
    """What the benches hold a testbed target to, and how they drive it (the goals their issues set)."""

    zero_loss_goal_pps: int
    zero_loss_ladder: tuple[int, ...]
    zero_loss_packets: int
    install_goal_ms: float
    #: the install bench's replay: the original timing, or paced below the target's capacity
    install_pace: dict[str, Any]  # JSON out: the install pacing the manifest records
    install_t_cp_s: float
    install_max_packets: int | None = None
    #: the benches that measure this target's own switch (``invoke bench --what``): a night runs them as this
    #: target's, and skips or fails them as it does this target
    benches: tuple[str, ...] = ()


@dataclass
class TargetResult:
    """One verdict per replayed packet, the switch's counters, and what the replay did."""

    verdicts: Verdicts
    counters: SwitchCounters | None        # None: the target could not read them (reported as unknown)
    outcome: ReplayOutcome | None = None   # None: classified in-process (the reference)
    latency: PerPacketLatency | None = None
    received: np.ndarray | None = None      # testbeds: which replayed frames came back with a verdict
    registers: Registers | None = None  # the state registers as read after the run (where readable)
    shards: int = 1                          # testbeds the packets were split over (chimera.targets.sharded)
    unsharded: Verdicts | None = None        # sharded runs: the unsharded reference's verdicts, to report beside
    program_time: ProgramTime | None = None  # the program's own run time over the replay (where counted)

    @property
    def evictions(self) -> int | None:
        return None if self.counters is None else self.counters.evictions

    def columns(self) -> Cells:
        """Table columns of this result (the outcome's, and the counters everyone has)."""
        out: Cells = self.outcome.columns() if self.outcome else {}
        out["new_flows"] = None if self.counters is None else self.counters.new_flows
        if self.shards > 1:
            out["shards"] = self.shards
        return out


@dataclass
class BaselineResult:
    """One replay through a baseline program (Capability.BASELINES): what arrived, when, and the program's cost.
    ``accounting.verdicts`` counts the frames that arrived (a baseline marks them, or not, but judges none)."""

    program: str
    accounting: Accounting
    latency: PerPacketLatency
    program_time: ProgramTime | None = None


class CapabilityError(ConfigError):
    """A kind asked a target for something it cannot do."""


class Target(abc.ABC):
    """One dataplane. Subclasses set ``name``, ``label``, ``capabilities`` and ``auto_rank`` and implement
    ``unavailable_reason`` and ``run``; the rest of the record has defaults that mean "none"."""

    name: ClassVar[str]
    #: how tables label a row this target classified ("where" it ran)
    label: ClassVar[str]
    #: how prose names it ("eBPF"), and its dataplane program ("the eBPF program", "chimera.p4")
    title: ClassVar[str]
    program: ClassVar[str]
    capabilities: ClassVar[Capability] = Capability.NONE
    #: ``--target auto`` takes the available target of the highest rank (None: never chosen automatically)
    auto_rank: ClassVar[int | None] = None
    #: the clocks it classifies on, the default first (docs/pipeline.md, "Clocks")
    clocks: ClassVar[tuple[Clock, ...]] = ("trace",)
    #: tools whose version every run's manifest records: name -> the command that prints it
    tools: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: the rate the conformance tests replay at on this target (None: it classifies in process)
    conformance_pps: ClassVar[int | None] = None
    #: the conformance tests replay at most this many frames of a capture on it (None: all)
    conformance_frames: ClassVar[int | None] = None
    #: the shortest slow-loop tick (s) it keeps up with under traffic on its own clock (installs take time)
    min_tick_s: ClassVar[float] = 0.1
    #: where its mutants come from (None: no mutation score for this target)
    mutants: ClassVar[MutantSource | None] = None
    #: the benches' goals and settings (None: the switch benches leave it out)
    bench: ClassVar[BenchProfile | None] = None

    def __init__(self, build: BuildOptions | None = None, build_dir: Path | None = None) -> None:
        """``build``: how a program is built (coverage counters, a mutant source); ``build_dir``: where."""
        self.build = build or BuildOptions()
        self.build_dir = build_dir

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

    def clock(self, asked: Clock | None) -> Clock:
        """The clock a run classifies on: the one asked for where this target has it, else its default."""
        return asked if asked in self.clocks else self.clocks[0]

    @classmethod
    def build_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> Path:
        """Compile the dataplane program for ``art`` into ``out_dir`` (``invoke build``; ``build``: a mutant source,
        coverage counters); its path."""
        raise CapabilityError(f"the {cls.name} target has no program to build",
                              "build a target that compiles one (see invoke --help build)")

    @classmethod
    def verify_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> None:
        """Raise ChimeraError where the program (a mutant's) cannot run at all: it does not build, or does not
        load where loading verifies it."""
        cls.build_program(art, out_dir, build)

    def replay_rate(self, art: Artifact) -> int | None:
        """The rate it replays ``art`` at (measured where it was, else assumed); None: it classifies in process."""
        return None

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

    def baselines(self) -> dict[str, str]:
        """The baseline programs it can run on the pipeline's path: name -> what it does ({}: none)."""
        return {}

    def run_baseline(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
                     program: str) -> BaselineResult:
        """``table`` replayed through a baseline program instead of the pipeline (Capability.BASELINES)."""
        self.require(Capability.BASELINES, "baseline programs")
        raise NotImplementedError

    def time_programs(self, on: bool = True) -> bool:
        """Count the switch program's own run time in the runs that follow (TargetResult.program_time); whether
        this target can (False: it cannot, and nothing changes)."""
        return False

    def unsupported(self, art: Artifact) -> str | None:
        """Why this target cannot run the artifact, or None."""
        return None

    @classmethod
    def limits(cls) -> dict[str, int]:
        """Compiled-in maxima of the dataplane, by artifact constant ({}: none); checked before training."""
        return {}

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
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
