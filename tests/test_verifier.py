"""The verifier matrix's one kernel (chimera.targets.ebpf.verifier, chimera.bench.verifier): what this kernel's
verifier says of a program, accepted or refused, and the bench's column for an experiment's variants."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from chimera.targets.ebpf import kernel_probe
from chimera.targets.ebpf.build import build_object
from chimera.targets.ebpf.verifier import COMPLEXITY_LIMIT, load_report

from builders import quickstart_artifact

WHY = kernel_probe() if shutil.which("clang") else "clang is not installed (scripts/bootstrap)"
pytestmark = [pytest.mark.root, pytest.mark.skipif(WHY is not None, reason=f"no eBPF program loads here: {WHY}")]

#: reads the packet without checking its length: every verifier refuses it
UNCHECKED = """#include <linux/bpf.h>
#define SEC(n) __attribute__((section(n), used))
SEC("tc") int chimera_ingress(struct __sk_buff *skb) { return ((char *)(long)skb->data)[0]; }
char LICENSE[] SEC("license") = "GPL";
"""


def test_the_pipeline_loads_and_says_what_the_verifier_did(tmp_path: Path) -> None:
    rep = load_report(build_object(quickstart_artifact().art, tmp_path))
    assert rep.loaded and not rep.error
    assert rep.insns > 100 and rep.jited_bytes > 0
    assert 0 < rep.verified_insns < COMPLEXITY_LIMIT   # this kernel (>= 5.16) says how much the verifier walked


def test_a_refused_program_is_reported_with_the_verifiers_words(tmp_path: Path) -> None:
    """Seen failing with every load reported as accepted."""
    src = tmp_path / "unchecked.bpf.c"
    src.write_text(UNCHECKED)
    obj = tmp_path / "unchecked.o"
    subprocess.run(["clang", "-g", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", str(src), "-o",
                    str(obj)], check=True)
    rep = load_report(obj)
    assert not rep.loaded and rep.insns == 0
    assert "the kernel rejected" in rep.error and "verifier log tail" in rep.error


def test_the_bench_loads_every_variant_of_an_experiment(tmp_path: Path) -> None:
    from chimera.bench.verifier import main
    res = main(tmp_path / "results", experiment="quickstart", data_root=tmp_path / "data")
    assert res.rows and all(r.loaded for r in res.rows) and not res.refused
    assert all(0 < r.verified_insns < r.limit for r in res.rows)
    run = next((tmp_path / "results" / "bench-verifier").iterdir())
    assert run.name.endswith("-k" + res.kernel)   # one label per kernel: the archive keeps every column
    assert "| loaded |" in (run / "summary.md").read_text()


def _probe(tmp_path: Path) -> Path:
    """scripts/verifier-probe.c linked statically, as scripts/vm-boot links it for a guest."""
    from builders import ROOT
    if not Path("/usr/include/bpf/libbpf.h").is_file() or shutil.which("gcc") is None:
        pytest.skip("the probe needs gcc and libbpf-dev (scripts/bootstrap installs them)")
    exe = tmp_path / "verifier-probe"
    subprocess.run(["gcc", "-O2", "-static", "-o", str(exe), str(ROOT / "scripts" / "verifier-probe.c"), "-lbpf",
                    "-lelf", "-lz"], check=True, capture_output=True)
    return exe


def test_a_guests_answers_become_the_record(tmp_path: Path) -> None:
    """The VM path on this kernel: the export, the static probe over each object (as the guest's load.sh runs it),
    and the record made from its answers; an object the kernel refuses is recorded refused with the verifier's
    words, and identical programs share one object (seen failing with the refusal read as a load)."""
    import json

    from chimera.bench.verifier import main
    export, answers = tmp_path / "export", tmp_path / "answers"
    assert main(tmp_path / "results", experiment="quickstart", data_root=tmp_path / "data", export=export) is None
    index = json.loads((export / "index.json").read_text())
    objects = {p["object"] for p in index["programs"] if p["object"]}
    assert objects and len(objects) <= len(index["programs"])
    src = tmp_path / "unchecked.bpf.c"   # one more program, one every kernel refuses
    src.write_text(UNCHECKED)
    subprocess.run(["clang", "-g", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", str(src), "-o",
                    str(export / "bad.o")], check=True)
    index["programs"].append({"variant": "unchecked", "object": "bad.o", "why": ""})
    (export / "index.json").write_text(json.dumps(index))
    probe = _probe(tmp_path)
    answers.mkdir()
    (answers / "index.json").write_text((export / "index.json").read_text())
    (answers / "kernel").write_text("6.1.0-test\n")
    for o in sorted(export.glob("*.o")):
        r = subprocess.run([str(probe), str(o)], capture_output=True, text=True)
        (answers / f"{o.stem}.json").write_text(r.stdout)
        (answers / f"{o.stem}.log").write_text(r.stderr)
    res = main(tmp_path / "results", guest=answers)
    assert res is not None and res.kernel == "6.1.0-test" and res.refused == ["unchecked"]
    ok = [r for r in res.rows if r.loaded]
    assert ok and all(0 < r.verified_insns < r.limit and r.insns > 100 for r in ok)
    bad = next(r for r in res.rows if r.variant == "unchecked")
    assert "refused" in bad.why and "the verifier processed 2 instructions, its limit 1,000,000" in bad.why
    assert bad.verified_insns == 2
