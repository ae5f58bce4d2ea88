"""A toy testbed target: its "switch" is a program file run in this process, which reads the artifact.

It declares the capability TESTBED, so the harness treats it as it treats eBPF and BMv2: its verdicts are checked
against the reference on the same frames and clock (the shared ``conformance``), it reports an accounting of every
frame, and the nightly requires its counters. Its program (``program.py``, or a build's mutant source) is what
``invoke mutate --files toy`` mutates.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from chimera.controlplane.schedule import TraceControl
from chimera.data.pcap import PacketTable
from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.targets.base import Capability, MutantSource, Target, TargetResult
from chimera.targets.testbed import conformance
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.outcome import Accounting, LatencySummary, Rates, ReplayOutcome, SwitchCounters
from chimera.testbed.replay import ReplayConfig

PROGRAM = Path(__file__).with_name("program.py")


def load(source: Path) -> ModuleType:
    """The program as a module (a mutant's source in place of the shipped one)."""
    spec = importlib.util.spec_from_file_location(f"chimera_toy_program_{abs(hash(source))}", source)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load the toy program {source}", "check the path")
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - a program that does not load is a build failure
        raise TargetError(f"the toy program {source} does not load: {type(e).__name__}: {e}", "fix it") from None
    return mod


class ToyTarget(Target):
    """Classifies by running its program over the replayed frames, on the trace's clock."""

    name = "toy"
    label = "toy"
    title = "the toy"
    program = "the toy program"
    capabilities = Capability.TESTBED | Capability.TRACE_CLOCK | Capability.REGISTER_READ | Capability.LIVE_INSTALL
    auto_rank = None
    conformance_pps = 1
    mutants = MutantSource("toy", PROGRAM, (("def classify", "# end of the program"),), "python",
                           ("tests/test_conformance.py", "-k", "toy"))

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None

    @classmethod
    def build_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> Path:
        source = (build or BuildOptions()).source or PROGRAM
        load(source)
        return source

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
            control: TraceControl | None = None) -> TargetResult:
        prog = load(self.build.source or PROGRAM)
        got, state = prog.classify(art, table, control)
        n = len(table)
        regs: dict[str, Any] = {k: v for k, v in state.registers().items() if k != "counters"}
        received = np.ones(n, bool)
        versions = dict(control.artifacts) if control is not None and control.artifacts else art
        conf = conformance(versions, table, got, received, table.ts_ns, regs, trace_clock=True)
        out = ReplayOutcome("trace", "in process", Accounting(n, n, 0, "", 0, 0), Rates(), LatencySummary(),
                            conformance=conf)
        return TargetResult(got, SwitchCounters.of(state.registers()["counters"]), out, received=received,
                            registers=regs)
