"""The BMv2 target: simple_switch_grpc running p4/chimera.p4 as s1, programmed over P4Runtime.

Owns the switch node (``node.Bmv2Switch``), the p4c wrapper (``compiler``), the
control-plane contract (``schema``, committed P4Info), the P4Runtime entities and
versioned install (``p4rt``), Thrift register reads (``thrift``) and the
network-free file-mode conformance harness (``files``).

p4c and BMv2 are not installable on this project's own machines (no package in
any registry they reach); they are on the reviewers' Vagrant VM (Vagrantfile).
Where they are absent, ``--target bmv2`` fails fast naming what to install, and
the BMv2 tests skip with that reason. Nothing here pretends to have run.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from chimera.data.pcap import PacketTable
from chimera.formats.artifact import Artifact
from chimera.targets.base import BenchProfile, Capability, MutantSource, TargetResult
from chimera.targets.bmv2.compiler import INSTALL_HINT, compile_fixed, compile_p4
from chimera.targets.bmv2.node import Bmv2Switch
from chimera.targets.bmv2.p4rt import check_supported, p4_limits
from chimera.targets.bmv2.schema import P4_SOURCE, REDIRECT_SOURCE
from chimera.targets.software.host import host_pace, run_on_classifier_host
from chimera.targets.testbed import TestbedTarget
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.replay import ReplayConfig



class Bmv2Target(TestbedTarget):
    """s1 is simple_switch_grpc running chimera.p4 (the card's switch)."""

    name = "bmv2"
    title = "BMv2"
    program = "chimera.p4"
    label = "bmv2"
    switch_cls = Bmv2Switch
    capabilities = TestbedTarget.capabilities | Capability.SOFTWARE_HOST
    auto_rank = 2
    ladder = (250, 500, 1_000, 2_000, 4_000, 8_000, 16_000)
    assumed_pps = 500
    tools = {"p4c-bm2-ss": ("p4c-bm2-ss", "--version"), "simple_switch_grpc": ("simple_switch_grpc", "--version")}
    conformance_pps = 300
    conformance_frames = 1_500   # its rate is low: shorter replays
    min_tick_s = 1.0
    mutants = MutantSource(
        "p4", P4_SOURCE,
        (("parser ChimeraParser", "control ChimeraVerifyChecksum"),
         ("    apply {\n        bit<64> cnt;",
          "/* ------------------------------------------------------------------ egress")),
        "p4", ("tests/test_conformance.py", "-k", "bmv2"), pps=500)
    bench = BenchProfile(zero_loss_goal_pps=5_000, zero_loss_ladder=(500, 1_000, 2_000, 5_000, 10_000, 20_000),
                         zero_loss_packets=3_000, install_goal_ms=1000.0, install_pace={"mode": "pps", "pps": 300},
                         install_t_cp_s=0.8, install_max_packets=3000,
                         benches=("bmv2ratio", "toolchain", "bmv2files"))

    @classmethod
    def build_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> Path:
        """The BMv2 JSON of chimera.p4 for ``art`` (p4c-bm2-ss)."""
        return compile_p4(art, out_dir, build)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        missing = [t for t in cls.tools if shutil.which(t) is None]
        if missing:
            return f"{' and '.join(missing)} not installed (p4c/BMv2 are in no registry this machine reaches)"
        return super().unavailable_reason()

    @classmethod
    def install_hint(cls) -> str:
        return INSTALL_HINT

    def program_sources(self) -> list[Path]:
        return [P4_SOURCE]

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
        return {**super().describe(), "switch_clock": "BMv2 ingress_global_timestamp (µs, x1000 to ns)",
                "note": "logging builds are 10x slower or more; the manifest records the binary's version"}

    def unsupported(self, art: Artifact) -> str | None:
        return check_supported(art)

    def run_software(self, model_json: Path, table: PacketTable, run_dir: Path, slug: str, *,
                     replay: ReplayConfig) -> TargetResult:
        """A † configuration: BMv2 runs p4/redirect.p4 (h1 -> sc -> h2) while the software classifier host sc
        marks the frames (on the trace clock's shim, or its own clock); chimera.p4 is pushed afresh by the next
        ``load``."""
        tb = self._ensure_testbed(run_dir)
        prep = self._prepare(table, run_dir, "trace" if replay.clock == "trace" else "switch", 1, False)
        with tb.s1.fixed_program(compile_fixed(REDIRECT_SOURCE, self.build_dir)):
            return run_on_classifier_host(tb, model_json, prep.pcap, prep.frames, host_pace(replay), run_dir, slug,
                                          prep.sent, prep.overhead)

    @classmethod
    def limits(cls) -> dict[str, int]:
        return p4_limits()
