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
did: issue 22; so does MKL's GEMM on a CPU with AMX and AVX512-FP16). numpy's and scipy's
OpenBLAS pick a GEMM kernel by CPU (Haswell, Zen, SkylakeX, ...), and each kernel sums in its own order: on one
machine a matrix product gave three different results under three OPENBLAS_CORETYPE values. numpy's own ufuncs
(exp, log, ...) dispatch to AVX-512 code where the CPU has it. Two reference runs of the same days and seeds, one
made on another machine, agreed in 101 of 120 rows (the rest within 1.1e-4 of F1) before these were pinned too.
Importing the package pins them all to AVX2 where the CPU has it, before numpy and torch load, so a fixed seed
trains the same tables on any x86-64 machine with AVX2: torch's kernels, MKL's path (its conditional numerical
reproducibility mode, which makes Intel and AMD CPUs take one path), OpenBLAS's kernel, and numpy's dispatch
(AVX-512 turned off). ``CHIMERA_CPU_ISA=native`` keeps the machine's own choice. The manifest's environment
records the CPU and the pins a run ran under (chimera.formats.rundir).
"""

import os as _os

__version__ = "0.1.0"

#: the instruction set float kernels are pinned to (CHIMERA_CPU_ISA overrides; "native": no pin)
CPU_ISA = _os.environ.get("CHIMERA_CPU_ISA", "avx2").lower()


def cpuinfo() -> tuple[str, set[str]]:
    """The CPU's model name and its ISA flags, from /proc/cpuinfo (empty where it cannot be read): the pins below
    and the manifest's CPU record (chimera.formats.rundir) read the same lines."""
    model, flags = "", set[str]()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not model:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    return model, flags


def _cpu_flags() -> set[str]:
    return cpuinfo()[1]


#: the environment variables that pin float kernels, for each instruction set they can be pinned to. torch's own
#: vectorized kernels, MKL's BLAS dispatch and its one path on Intel and AMD alike, oneDNN's, numpy's and scipy's
#: OpenBLAS kernel family, numpy's ufunc dispatch (nothing above AVX2; numpy 2.x names, one the machine lacks is
#: ignored). The manifest records each one's value (chimera.formats.rundir).
ISA_PINS: dict[str, dict[str, str]] = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "MKL_CBWR": "AVX2",
             "ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
             "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"},
}
PIN_VARS = tuple(dict.fromkeys(v for pins in ISA_PINS.values() for v in pins))

if CPU_ISA != "native" and CPU_ISA in _cpu_flags():
    if CPU_ISA not in ISA_PINS:
        raise ImportError(f"CHIMERA_CPU_ISA={CPU_ISA!r} has no pins; set one of {sorted(ISA_PINS)} or 'native'")
    for _var, _value in ISA_PINS[CPU_ISA].items():
        _os.environ.setdefault(_var, _value)
