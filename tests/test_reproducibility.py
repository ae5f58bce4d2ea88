"""A fixed seed trains the same tables on any x86-64 machine with AVX2 (issue 22: the random-Fourier-feature
variant trained differently on an AVX-512 machine, through torch's vectorized sin/cos; chimera pins the float
kernels to AVX2). Each training runs in its own process, as on another machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from builders import ROOT
from chimera import PIN_VARS

#: the ablation's random-Fourier-feature row (m = 8, d_v = 8, 4 global tokens): the one that diverged. Four
#: epochs, not forty: the tables' SHA-256 compares every bit of them, and differently rounded sin/cos show in them
#: within a few epochs. Measured on this project's AVX-512 machine (Emerald Rapids), unpinned against pinned: the
#: same tables after one epoch (their integers absorb the first differences), different ones after two, three and
#: four. One epoch would not catch a broken pin here; four leave a margin
SCRIPT = f"""
import sys, logging
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'tests')!r})
logging.disable(logging.WARNING)
from chimera.experiments.config import resolve_variants
from chimera.experiments.load import build_artifact, load_experiment
names = [v.name for v in resolve_variants(load_experiment("ablation"))]
b = build_artifact("ablation", variant=names.index("Random Fourier features"), data_root=Path({str(ROOT / 'data')!r}),
                   overrides={{"model": {{"epochs": 4, "patience": 4}}}})
print("SHA", b.art.sha256)
"""


def train_rff(**env: str) -> subprocess.Popen[str]:
    """One training in a process of its own, started (the three of a test run at once: each is one thread)."""
    e = {k: v for k, v in os.environ.items() if k not in (*PIN_VARS, "CHIMERA_CPU_ISA")}
    return subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**e, **env})


def sha_of(p: subprocess.Popen[str]) -> str:
    """The tables' SHA-256 the training printed."""
    out, err = p.communicate(timeout=600)
    line = next((ln for ln in out.splitlines() if ln.startswith("SHA ")), None)
    assert line, out[-2000:] + err[-3000:]
    return line.split()[1]


def _flags() -> set[str]:
    from chimera import _cpu_flags
    return _cpu_flags()


@pytest.mark.skipif("avx2" not in _flags(), reason="the pin needs a CPU with AVX2")
def test_rff_trains_the_same_tables_whatever_the_threads_and_the_vector_unit() -> None:
    # an AVX2-only machine: there every library's own dispatch stops at AVX2. ATEN alone is not that machine: on a
    # CPU with AMX and AVX512-FP16 (Sapphire Rapids) MKL's AVX-512 GEMM rounds differently from its AVX2 one, so
    # the pin must reach MKL (and oneDNN) as well, from inside the package, before torch loads them
    avx2_only = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    pinned, avx2, threads = (train_rff(OMP_NUM_THREADS="1"), train_rff(CHIMERA_CPU_ISA="native", **avx2_only),
                             train_rff(OMP_NUM_THREADS="2", MKL_NUM_THREADS="2"))  # the last: another thread count
    want = sha_of(pinned)
    assert sha_of(avx2) == want
    assert sha_of(threads) == want


def test_the_small_models_train_on_one_thread_and_give_the_callers_setting_back(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Rule weights, like the model and the baselines, learn single-threaded (chimera.determinism): bit-reproducible
    whatever the core count, and 2-3x faster at their size than with a thread per core. The caller's setting
    comes back, also after an error."""
    import numpy as np
    import torch

    import chimera.rules.weights as W
    from chimera.determinism import single_threaded
    torch.set_num_threads(2)
    seen: list[int] = []
    real = W._learn
    monkeypatch.setattr(W, "_learn", lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1])
    rng = np.random.default_rng(0)
    w = W.learn_soft_weights(rng.random((200, 4)) < 0.3, rng.integers(0, 3, 200), 3, seed=1, epochs=3)
    assert seen == [1] and w.shape == (4, 3) and torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), single_threaded():
        assert torch.get_num_threads() == 1
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


#: a fresh process: import chimera (with numpy after it, as every entry point does), then report what ran
PINS = """
import json, chimera, numpy, torch
from chimera.formats.rundir import cpu
print(json.dumps({**cpu(), "torch": torch.backends.cpu.get_cpu_capability()}))
"""


@pytest.mark.skipif("avx2" not in _flags(), reason="the pin needs a CPU with AVX2")
def test_the_float_pins_reach_every_library_and_the_manifest_records_them() -> None:
    """Importing chimera pins torch, MKL, oneDNN, OpenBLAS and numpy's dispatch to AVX2 before they load (a
    reference run made on another machine differed in 19 of 120 rows while only the first three were pinned):
    each variable is set, OpenBLAS runs the pinned kernel family, and the manifest's cpu record says so."""
    import json

    from chimera import ISA_PINS
    env = {k: v for k, v in os.environ.items() if k not in (*PIN_VARS, "CHIMERA_CPU_ISA")}
    r = subprocess.run([sys.executable, "-c", PINS], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(r.stdout.strip().splitlines()[-1])
    assert rec["pinned"] == "avx2" and rec["torch"] == "AVX2" and "avx2" in rec["isa"] and rec["model"]
    assert all(rec["pins"][v] for v in PIN_VARS), rec["pins"]
    assert rec["blas"] and set(rec["blas"].values()) == {ISA_PINS["avx2"]["OPENBLAS_CORETYPE"]}, rec["blas"]


@pytest.mark.skipif("avx" not in _flags(), reason="Sandybridge's kernels need a CPU with AVX")
def test_the_float_probe_sees_openblas_kernel() -> None:
    """The night's float probe covers numpy's matrix product: another OpenBLAS kernel family (Sandybridge's, which
    any x86-64 CPU with AVX runs) changes the probe, so a golden taken under other BLAS kernels is told apart."""
    code = "from chimera.nightly.floats import float_probe; print(float_probe())"
    env = {k: v for k, v in os.environ.items() if k not in (*PIN_VARS, "CHIMERA_CPU_ISA")}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, **extra},
                           cwd=ROOT, timeout=300) for extra in ({}, {"OPENBLAS_CORETYPE": "Sandybridge"})]
    pinned, other = (r.stdout.strip() for r in runs)
    assert pinned and other and pinned != other, [r.stderr[-500:] for r in runs]


@pytest.mark.skipif("avx" not in _flags(), reason="needs a CPU with AVX: an instruction set it has but no pins name")
def test_an_instruction_set_without_pins_is_a_clear_error() -> None:
    """CHIMERA_CPU_ISA naming an instruction set the CPU has but the pin table lacks stops the import with the
    choices, rather than pinning torch to a capability it rejects and MKL to another: half-pinned floats would
    differ from a pinned run's with nothing to say why."""
    env = {k: v for k, v in os.environ.items() if k not in (*PIN_VARS, "CHIMERA_CPU_ISA")}
    r = subprocess.run([sys.executable, "-c", "import chimera"], capture_output=True, text=True,
                       env={**env, "CHIMERA_CPU_ISA": "avx"}, cwd=ROOT, timeout=120)
    assert r.returncode != 0 and "CHIMERA_CPU_ISA='avx' has no pins" in r.stderr and "native" in r.stderr, r.stderr
