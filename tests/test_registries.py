"""The registries: unknown names are refused with the known ones, no code outside chimera/targets/ names a
target, the commands sit where the README documents them (the toys that prove a new kind and a new target are one
folder each: tests/test_toys.py).

Also: ``--target auto`` picks BMv2 > eBPF (probed by loading a small program: a bounded loop, an mmapable array) > reference, logged with why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from chimera.targets import registry

from builders import ROOT


def test_an_unknown_kind_or_target_is_named_with_the_known_ones(tmp_path: Path) -> None:
    from chimera.errors import ConfigError
    from chimera.experiments.load import load_experiment
    p = tmp_path / "x.yaml"
    p.write_text(yaml.safe_dump({"name": "x", "kind": "nope", "dataset": {"synthetic": {}}}))
    with pytest.raises(ConfigError, match="(?s)unknown experiment kind 'nope'.*variants"):
        load_experiment(str(p))
    with pytest.raises(ConfigError, match="(?s)unknown target 'nope'.*reference"):
        registry.select_target("nope")


# --------------------------------------------------------------------------- auto: BMv2 > eBPF > reference

def _available(monkeypatch: pytest.MonkeyPatch, bmv2: str | None, ebpf_probe: str | None) -> None:
    from chimera.targets import bmv2 as b, ebpf as e
    from chimera.targets.testbed import TestbedTarget
    monkeypatch.setattr(TestbedTarget, "unavailable_reason", classmethod(lambda cls: None))  # root, tools: present
    monkeypatch.setattr(b.Bmv2Target, "unavailable_reason", classmethod(lambda cls: bmv2))
    monkeypatch.setattr(e, "kernel_probe", lambda: ebpf_probe)
    monkeypatch.setattr(e.shutil, "which", lambda name: f"/usr/bin/{name}")


@pytest.mark.parametrize("bmv2, probe, want", [
    (None, None, "bmv2"),                                                  # the card's switch where installed
    ("simple_switch_grpc and p4c-bm2-ss not installed", None, "ebpf"),    # else eBPF where the kernel loads it
    ("simple_switch_grpc and p4c-bm2-ss not installed",
     "the kernel (5.4) did not load the probe program (a bounded loop and an mmapable array: needs >= 5.5)", "reference"),  # else the reference
])
def test_auto_picks_bmv2_then_ebpf_then_reference(bmv2: str | None, probe: str | None, want: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _available(monkeypatch, bmv2, probe)
    name, why = registry.resolve_auto()
    assert name == want
    if bmv2:
        assert "bmv2 cannot run" in why and "not installed" in why
    if probe:
        assert "did not load the probe program" in why


def test_the_kernel_probe_really_loads_a_program() -> None:
    """Not a version string: the probe compiles and loads probe.bpf.c (root, clang and libbpf needed)."""
    from chimera.targets import ebpf
    from chimera.targets.testbed import TestbedTarget
    if TestbedTarget.unavailable_reason() is not None:
        pytest.skip(f"no testbed here: {TestbedTarget.unavailable_reason()}")
    ebpf.kernel_probe.cache_clear()
    assert ebpf.kernel_probe() is None  # this kernel (>= 5.17) loads it
    ebpf.kernel_probe.cache_clear()
    import os
    os.environ[ebpf.PROBE_FAIL_ENV] = "simulated"
    try:
        assert "simulated" in (ebpf.kernel_probe() or "")
        assert "simulated" in (ebpf.EbpfTarget.unavailable_reason() or "")
    finally:
        del os.environ[ebpf.PROBE_FAIL_ENV]
        ebpf.kernel_probe.cache_clear()


def test_auto_without_bmv2_on_the_path_takes_ebpf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real lookup, not a patched one: a PATH holding every tool but BMv2's resolves to eBPF (kernel probed)."""
    from chimera.targets import ebpf
    from chimera.targets.bmv2 import Bmv2Target
    TOOLS = tuple(Bmv2Target.tools)
    from chimera.targets.testbed import TestbedTarget
    if TestbedTarget.unavailable_reason() is not None:
        pytest.skip(f"no testbed here: {TestbedTarget.unavailable_reason()}")
    ebpf.kernel_probe.cache_clear()
    if ebpf.EbpfTarget.unavailable_reason() is not None:
        pytest.skip(f"eBPF cannot run here: {ebpf.EbpfTarget.unavailable_reason()}")
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        for exe in (Path(d).iterdir() if Path(d).is_dir() else ()):
            if exe.name not in TOOLS and not (shadow / exe.name).exists() and os.access(exe, os.X_OK):
                (shadow / exe.name).symlink_to(exe)
    monkeypatch.setenv("PATH", str(shadow))
    name, why = registry.resolve_auto()
    assert name == "ebpf", why
    assert "bmv2 cannot run" in why and "p4c-bm2-ss" in why


def test_a_bench_is_one_record_read_by_the_cli_and_the_nightly(monkeypatch: pytest.MonkeyPatch) -> None:
    """chimera.bench.BENCHES: an option a bench does not take is refused, naming the benches that take it; the
    nightly suite admits exactly the benches whose record says what a night tracks; a night runs a bench through
    its record (a toy bench here, one record and nothing else)."""
    import chimera.bench as B
    from chimera.errors import ConfigError
    from chimera.nightly.config import NightlyConfig
    from chimera.nightly.suite import run_benches
    from chimera.report.sections import BenchStat
    with pytest.raises(ConfigError, match="takes no option --seeds") as e:
        B.dispatch("zeroloss", seeds=(1, 2))
    assert "fidelity" in e.value.fix
    with pytest.raises(ConfigError, match="unknown benchmark"):
        B.dispatch("nope")
    assert set(B.nightly_benches()) == {"ingest", "pipeline", "install", "switch"}
    with pytest.raises(ValueError, match="unknown nightly benches"):
        NightlyConfig(benches=["fidelity"])
    toy = B.Bench("toy", "chimera.bench.toy", "a toy", nightly=lambda n, prior: {"toy_ratio": {"median": n / 10}},
                  metric="toy_ratio")
    monkeypatch.setitem(B.BENCHES, "toy", toy)
    cfg = NightlyConfig(benches=["toy"], repeats=5)
    assert run_benches(cfg, ({}, {})) == {"toy_ratio": BenchStat(median=0.5)}
    # one NightPrior goes through the night: a later bench divides by what an earlier one measured
    first = B.Bench("first", "x", "sets the rate", nightly=lambda n, prior: (
        setattr(prior, "ingest_pps", 4.0), {"first_pps": {"median": 4.0}})[1], metric="first_pps")
    later = B.Bench("later", "x", "reads it", nightly=lambda n, prior: {
        "later_ratio": {"median": 2.0 / (prior.ingest_pps or float("nan"))}}, metric="later_ratio")
    monkeypatch.setitem(B.BENCHES, "first", first)
    monkeypatch.setitem(B.BENCHES, "later", later)
    monkeypatch.setattr(B, "nightly_benches", lambda: ["toy", "first", "later"])
    got = run_benches(NightlyConfig.model_construct(benches=["first", "later"], repeats=1), ({}, {}))
    assert got["later_ratio"] == BenchStat(median=0.5)
    import dataclasses

    from chimera.targets.registry import target_class
    sick = B.Bench("sick", "x", "needs a switch", nightly=toy.nightly, metric="sick_ratio")
    monkeypatch.setitem(B.BENCHES, "sick", sick)
    ebpf = target_class("ebpf")      # the target's record names the benches of its own switch
    assert ebpf.bench is not None
    monkeypatch.setattr(ebpf, "bench", dataclasses.replace(ebpf.bench, benches=(*ebpf.bench.benches, "sick")))
    assert sick.target == "ebpf" and toy.target is None
    assert run_benches(NightlyConfig(benches=["sick"]), ({}, {"ebpf": "no clang"})) == \
        {"sick_ratio": BenchStat(error="no clang")}
    assert run_benches(NightlyConfig(benches=["sick"]), ({"ebpf": "may be absent"}, {})) == {}


def test_no_target_is_named_outside_its_folder_and_the_registries() -> None:
    """Knowledge of a target lives in its record: no code outside chimera/targets/ names a target, as a string
    literal or inside an f-string's ``exp@target`` key; the reference is named by its role (registry.TRUTH).
    A bench that measures one target's switch is named in that target's record (``bench.benches``)."""
    import re
    pattern = re.compile(r"""["'](ebpf|bmv2|reference)["']|@(ebpf|bmv2|reference)\b""")
    found = []
    for py in sorted([*(ROOT / "chimera").rglob("*.py"), *(ROOT / "tasks").rglob("*.py")]):
        rel = py.relative_to(ROOT).as_posix()
        if rel.startswith("chimera/targets/"):
            continue
        found += [f"{rel}:{i}: {ln.strip()}" for i, ln in enumerate(py.read_text().splitlines(), 1)
                  if pattern.search(ln)]
    assert not found, "\n".join(found)


def test_the_books_own_blocks_import_no_kind_target_or_bench() -> None:
    """The book gathers the blocks (chimera.book.render); a kind's live in its package and the benches' in
    chimera/bench/blocks.py, so chimera/book/blocks.py reads runs through the registries and imports no resident:
    no module inside a kind's package, a target's folder or the bench package (their registries are allowed:
    ``chimera.experiments.kinds``, ``chimera.targets.registry``, ``chimera.targets.base``)."""
    import ast
    allowed = ("chimera.experiments.kinds", "chimera.targets.registry", "chimera.targets.base")
    resident = ("chimera.experiments.kinds.", "chimera.targets.", "chimera.bench")
    tree = ast.parse((ROOT / "chimera" / "book" / "blocks.py").read_text())
    mods = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    mods += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    bad = [m for m in mods if m.startswith(resident) and m not in allowed]
    assert not bad, bad
    from chimera.book.render import BLOCKS
    from chimera.experiments.kinds.accuracy import blocks as accuracy_blocks
    assert BLOCKS["accuracy"] is accuracy_blocks.BLOCKS["accuracy"]   # gathered from the kind's own module


def test_invoke_lists_the_documented_commands_at_the_top_level() -> None:
    """tasks/ is a package of collections, but the commands stay where the README documents them: every task at
    the top level (``invoke run-experiment``, not ``invoke run.run-experiment``), each one in the README."""
    import re
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "invoke", "--list"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    listed = set(re.findall(r"^  ([a-z0-9-]+)\s", out, re.M))
    assert listed == {"bench", "book", "build", "carry", "clean", "compare", "dashboard", "dataset", "fuzz", "join-sweep",
                      "mutate", "nightly", "p4header", "p4info", "prune", "publish", "replay", "report", "reproduce",
                      "republish", "run-experiment",
                      "setup", "sweep", "targets", "test", "topo"}
    readme = (ROOT / "README.md").read_text()
    assert not [t for t in listed if f"invoke {t}" not in readme]
