"""Chimera testbed: reproducible harness for in-switch traffic classification.

One subpackage per stage; imports only point down this list (checked by
import-linter, see pyproject.toml):

    nightly      the regression suite, its history and dashboard
    bench        benchmarks (invoke bench)
    sweep        Ray sweeps of an experiment's cells x seeds x datasets
    experiments  kinds (one package each, in a registry), configs, the stages of a run, the runner
    baselines    the paper's baselines and the yardsticks (decision tree, forest), on Chimera's split
    report       report.md and figures
    targets      dataplanes (a registry): reference, ebpf, bmv2, software classifier host
    controlplane the two-timescale slow loop and its schedule
    testbed      the Mininet harness: topology, switch node contract, replay, clocks, pacing, collect
    reference    the bit-exact integer pipeline (spec: docs/pipeline.md)
    compile      quantization, proven bounds, budgets, the constants header
    model        Map stage, attention training, fusion
    rules        rule files, ternary match semantics, soft-rule weights
    data         pcap ingest, flows, tokens, datasets, generators, adapters
    metrics      packet-level classification metrics
    formats      the wire formats (verdict header, trace-time shim), the table artifact, the results layout
    errors       error types carrying the problem and the fix
    paths        where the checkout's own files are (one definition)

``provision`` (what `invoke setup` installs) sits above them all and imports only errors.

Reproducibility across machines: float kernels that dispatch on the CPU's vector
instruction set give different bits on AVX2 and AVX-512 machines (torch's
vectorized sin and cos, which the random-Fourier-feature model trains through,
did: issue 22; so does MKL's GEMM on a CPU with AMX and AVX512-FP16). Importing
the package pins them to AVX2 where the CPU has it, before torch loads, so a fixed seed trains the same tables on any x86-64
machine with AVX2. ``CHIMERA_CPU_ISA=native`` keeps the machine's own choice.
"""

import os as _os

__version__ = "0.1.0"

#: the instruction set float kernels are pinned to (CHIMERA_CPU_ISA overrides; "native": no pin)
CPU_ISA = _os.environ.get("CHIMERA_CPU_ISA", "avx2").lower()


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


if CPU_ISA != "native" and CPU_ISA in _cpu_flags():
    _os.environ.setdefault("ATEN_CPU_CAPABILITY", CPU_ISA)          # torch's own vectorized kernels
    _os.environ.setdefault("MKL_ENABLE_INSTRUCTIONS", CPU_ISA.upper())  # MKL's BLAS dispatch
    _os.environ.setdefault("ONEDNN_MAX_CPU_ISA", CPU_ISA.upper())       # oneDNN's
