"""A toy testbed target: a Mininet switch node whose dataplane is a userspace process (``switchd.py``) running
the toy program (``program.py``) on every frame from port 1 to port 2.

It is a ``TestbedTarget`` like eBPF and BMv2: the harness brings up h1 - s1 - h2, replays from h1, collects the
marked frames at h2, accounts for every frame, and checks each verdict and the state registers against the
reference on the same frames and clock (``chimera.targets.testbed.conformance``). Its program is what
``invoke mutate --files toy`` mutates. Nothing outside this folder names it but the registry's one line.
"""

from __future__ import annotations

from pathlib import Path

from chimera.formats.artifact import Artifact
from chimera.targets.base import Capability, MutantSource
from chimera.targets.testbed import TestbedTarget
from chimera.testbed.nodes import BuildOptions

from chimera.targets.toy.node import PROGRAM, ToySwitch
from chimera.targets.toy.switchd import load_program


class ToyTarget(TestbedTarget):
    """The toy switch on the Mininet testbed."""

    name = "toy"
    label = "toy"
    title = "the toy"
    program = "the toy program"
    switch_cls = ToySwitch
    capabilities = Capability.TESTBED | Capability.TRACE_CLOCK | Capability.REGISTER_READ | Capability.LIVE_INSTALL
    auto_rank = None
    clocks = ("trace", "switch")
    #: a userspace process classifies a few thousand frames a second
    ladder = (250, 500, 1_000, 2_000)
    assumed_pps = 250
    conformance_pps = 500
    conformance_frames = 400
    mutants = MutantSource("toy", PROGRAM, (("def classify", "# end of the program"),), "python",
                           ("tests/test_conformance.py", "-k", "quickstart and toy-trace"))

    @classmethod
    def build_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> Path:
        """The program the switch will run, checked to load (a mutant's source in place of the shipped one)."""
        source = (build or BuildOptions()).source or PROGRAM
        load_program(source)
        return source

    def program_sources(self) -> list[Path]:
        return [self.build.source or PROGRAM, Path(__file__).with_name("switchd.py")]
