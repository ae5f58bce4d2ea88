"""The eBPF target: the Mininet testbed with the tc program (chimera.bpf.c) in s1.

Owns the switch node (``node.EbpfSwitch``), the object build (``build``), the
libbpf loader with versioned installs (``loader``) and the ctypes binding
(``libbpf``); the testbed (chimera.testbed) knows none of them.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from chimera.data.pcap import PacketTable, read_pcap
from chimera.errors import ChimeraError
from chimera.formats.artifact import Artifact
from chimera.targets.base import BenchProfile, Capability, MutantSource, TargetResult
from chimera.targets.ebpf.node import EbpfSwitch
from chimera.targets.software.host import host_pace, run_on_classifier_host
from chimera.targets.testbed import TestbedTarget
from chimera.testbed.collect import span_rate
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.outcome import ForwardingOutcome
from chimera.testbed.replay import ReplayConfig, replay as replay_once

log = logging.getLogger(__name__)
#: compile-time limits of chimera.bpf.c (its #error checks say the same)
LIMITS = {"NUM_CLASSES": 16, "SOFT_RULES": 32, "RF_FEATURES": 16, "D_V": 16, "NUM_CENTROIDS": 256}
SOURCES = [Path(__file__).with_name(n) for n in ("chimera.bpf.c", "ports.bpf.h")]
#: set to a reason to make the kernel probe fail (tests of `--target auto` on a kernel that would load it)
PROBE_FAIL_ENV = "CHIMERA_EBPF_PROBE_FAIL"


@functools.lru_cache(maxsize=1)
def kernel_probe() -> str | None:
    """Load the smallest program that uses what the pipeline needs from the kernel (a bounded loop and an
    mmapable array: >= 5.5); why it cannot load, or None. A real load, not a version string (backports and
    distribution kernels differ)."""
    forced = os.environ.get(PROBE_FAIL_ENV)
    if forced:
        return f"kernel probe failed ({PROBE_FAIL_ENV}={forced})"
    from chimera.targets.ebpf.build import build_probe_object
    from chimera.targets.ebpf.libbpf import BpfObject
    try:
        obj = BpfObject(str(build_probe_object(Path("/tmp/chimera-ebpf-probe"))))
        obj.close()
    except ChimeraError as e:
        return f"the kernel ({os.uname().release}) did not load the probe program (a bounded loop and an " \
               f"mmapable array: needs >= 5.5): {e.problem.splitlines()[0]}"
    return None


class EbpfTarget(TestbedTarget):
    """s1 is the eBPF/tc switch."""

    name = "ebpf"
    title = "eBPF"
    program = "the eBPF program"
    label = "ebpf"
    switch_cls = EbpfSwitch
    capabilities = (TestbedTarget.capabilities | Capability.SOFTWARE_HOST | Capability.FORWARDING
                    | Capability.BASELINES)
    auto_rank = 1
    ladder = (5_000, 20_000, 50_000, 100_000, 200_000)
    assumed_pps = 20_000
    tools = {"clang": ("clang", "--version"), "bpftool": ("bpftool", "version")}
    conformance_pps = 4_000
    mutants = MutantSource(
        "ebpf", SOURCES[0],
        (("static __always_inline __u32 bit_length32", "static const __u32 crc_table[256]"),
         ("static __always_inline __u32 crc32_13", "/* Benchmark baseline")),
        "c", ("tests/test_conformance.py", "-k", "ebpf"), pps=20_000)
    bench = BenchProfile(zero_loss_goal_pps=50_000, zero_loss_ladder=(10_000, 20_000, 50_000, 100_000, 200_000),
                         zero_loss_packets=20_000, install_goal_ms=20.0, install_pace={"mode": "speed"},
                         install_t_cp_s=0.1,
                         benches=("install", "switch", "verifier"))

    @classmethod
    def build_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> Path:
        """The tc object for ``art`` (clang -target bpf)."""
        from chimera.targets.ebpf.build import build_object
        return build_object(art, out_dir, build)

    @classmethod
    def verify_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> None:
        """Built, and loaded: the kernel's verifier is the check that counts."""
        from chimera.targets.ebpf.libbpf import BpfObject
        BpfObject(str(cls.build_program(art, out_dir, build))).close()

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the testbed with the eBPF switch cannot run here, or None."""
        why = super().unavailable_reason()
        if why is not None:
            return why
        if shutil.which("clang") is None:
            return "missing tools: clang (apt-get install clang)"
        try:
            from chimera.targets.ebpf.libbpf import lib
            lib()
        except ChimeraError as e:
            return e.problem
        return kernel_probe()

    def program_sources(self) -> list[Path]:
        return SOURCES

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
        return {**super().describe(), "switch_clock": "switch ingress (CLOCK_MONOTONIC)"}

    def run_software(self, model_json: Path, table: PacketTable, run_dir: Path, slug: str, *,
                     replay: ReplayConfig) -> TargetResult:
        """A † configuration: s1 redirects h1's frames to the software classifier host sc, which marks
        them and sends them back through s1 to h2; on the trace clock's shim, or the host's own clock."""
        tb = self._ensure_testbed(run_dir)
        prep = self._prepare(table, run_dir, "trace" if replay.clock == "trace" else "switch", 1, False)
        s1 = tb.s1
        s1.load_redirect([(f"{s1.name}-eth1", f"{s1.name}-eth3"), (f"{s1.name}-eth3", f"{s1.name}-eth2")])
        try:
            return run_on_classifier_host(tb, model_json, prep.pcap, prep.frames, host_pace(replay), run_dir, slug,
                                          prep.sent, prep.overhead)
        finally:
            s1.unload()

    def run_forwarding(self, table: PacketTable, run_dir: Path, slug: str, *,
                       replay: ReplayConfig) -> ForwardingOutcome:
        """Bare forwarding on the same path: s1 runs only a redirect program (h1 -> h2), no classification.
        The yardstick of the throughput figure; counts come from the two captures and the tools."""
        tb = self._ensure_testbed(run_dir)
        prep = self._prepare(table, run_dir, "switch", 1, False)
        s1 = tb.s1
        s1.load_redirect([(f"{s1.name}-eth1", f"{s1.name}-eth2")])
        try:
            files = replay_once(tb.h1, tb.h2, prep.pcap, host_pace(replay), run_dir / "replay", slug,
                                          len(prep.frames), switch_alive=s1.alive, rx_filter="")
        finally:
            s1.unload()
        sent, got = read_pcap(files.sent), read_pcap(files.received)
        return ForwardingOutcome(len(prep.frames), len(sent), len(got), files.failed_to_send, files.dropped_at_receiver,
                                 max(0, len(sent) - len(got) - files.dropped_at_receiver), span_rate(sent.ts_ns),
                                 span_rate(got.ts_ns))

    @classmethod
    def limits(cls) -> dict[str, int]:
        return dict(LIMITS)

    def unsupported(self, art: Artifact) -> str | None:
        """Why this artifact cannot run in the eBPF dataplane, or None."""
        if art.c("AGG_INCREMENTAL") != 1:
            return ("the batch form (and the kernel-table attention of rff/softmax) runs on the reference only; "
                    "the eBPF dataplane keeps incremental S_t/Z_t accumulators")
        for k, lim in LIMITS.items():
            if art.c(k) > lim:
                return f"{k}={art.c(k)} exceeds the eBPF program's maximum {lim}"
        return None


