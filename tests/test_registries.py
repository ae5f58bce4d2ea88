"""A new experiment kind and a new target are one module each plus one registry line: this test writes both
here (its own "module"), registers them, and runs them through the ordinary entry points (load, run, report,
sweep planning, compare), with no edit anywhere else.

Also: ``--target auto`` picks BMv2 > eBPF (probed by loading a bpf_loop program) > reference, logged with why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import BaseModel, ConfigDict

from chimera.experiments import kinds as kinds_registry
from chimera.experiments.config import ExperimentConfig
from chimera.experiments.kinds.base import Cell, Kind, NightlyTrack
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import prepare, record_dataset, resolve_dataset
from chimera.formats.tables import TableSchema
from chimera.reference.pipeline import Verdicts
from chimera.report.common import first_line, table
from chimera.report.run import RunView
from chimera.targets import registry
from chimera.targets.base import Capability, Target, TargetResult

from builders import ROOT

# --------------------------------------------------------------------------- the toy kind's "module"

COUNTS = TableSchema("toy_counts.csv", {"label": "str", "packets": "int", "share": "float"}, keys=("label",),
                     metrics=("share",))


class ToySpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    top: int = 3


class ToyExperiment(ExperimentConfig):
    kind: Literal["toy"] = "toy"  # type: ignore[assignment]
    toy: ToySpec = ToySpec()


def run_toy(ctx: RunContext) -> None:
    assert isinstance(ctx.cfg, ToyExperiment)
    data = prepare(resolve_dataset(ctx.cfg.the_dataset(), ctx.data_root), ctx.cfg.seed)
    record_dataset(ctx.run.manifest, data)
    y = data.y(data.test_rows)
    # the target classifies the test split: the toy kind counts its verdicts per class
    res = ctx.target.run(None, data.replay_table, ctx.run.path, "toy", replay=ctx.replay)  # type: ignore[arg-type]
    pred = res.verdicts.label[data.test_in_replay]
    labels = [data.classes[i] for i in pred if i < len(data.classes)]
    s = pd.Series(labels).value_counts().head(ctx.cfg.toy.top)
    COUNTS.write(pd.DataFrame({"label": s.index, "packets": s.to_numpy(), "share": s.to_numpy() / max(len(y), 1)}),
                 ctx.run.path)


def render_toy(run: RunView) -> list[str]:
    return [first_line(run), "", "# toy", "", table(run.table(COUNTS), COUNTS), ""]


TOY_KIND = Kind("toy", "a toy kind: verdict counts per class", ToyExperiment, run_toy, render_toy, (COUNTS,),
                lambda cfg: [Cell("all", {}, {})], NightlyTrack(COUNTS, "label", "share", counters=()))


# --------------------------------------------------------------------------- the toy target's "module"

class ToyTarget(Target):
    """Says every parsed packet is class 0."""

    name = "toy"
    capabilities = Capability.NONE
    auto_rank = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None

    def run(self, art, table, run_dir, slug, *, replay, control=None) -> TargetResult:  # type: ignore[no-untyped-def]
        n = len(table)
        z = np.zeros(n, np.uint8)
        return TargetResult(Verdicts(z, z.copy(), np.zeros(n, np.uint32), np.full(n, 0xFF, np.uint8), z.copy(),
                                     np.zeros(n, np.uint16), np.zeros((n, 0), np.int64)), None)


# --------------------------------------------------------------------------- the registry lines

@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(kinds_registry.KINDS, "toy", TOY_KIND)       # the kind's registry line
    monkeypatch.setitem(registry.TARGETS, "toy", ToyTarget)          # the target's registry line
    yield


def test_a_toy_kind_and_target_through_the_registries_alone(registered: None, tmp_path: Path) -> None:
    from chimera.experiments.compare import compare_runs
    from chimera.experiments.load import load_experiment
    from chimera.experiments.render import render
    from chimera.experiments.runner import run_experiment
    from chimera.sweep.plan import plan
    p = tmp_path / "toy.yaml"
    p.write_text(yaml.safe_dump({"name": "toy-run", "kind": "toy", "target": "toy", "toy": {"top": 2},
                                 "dataset": {"synthetic": {"profile": "ciciot", "flows": 60, "duration_s": 5,
                                                           "max_packets_per_flow": 10}}}))
    cfg = load_experiment(str(p))
    assert isinstance(cfg, ToyExperiment) and cfg.toy.top == 2
    out = run_experiment(cfg, results_root=tmp_path / "r", data_root=tmp_path / "d")
    df = pd.read_csv(out / "toy_counts.csv")
    assert list(df["packets"]) and (df["label"] == df["label"].iloc[0]).all() and len(df) == 1
    m = json.loads((out / "manifest.json").read_text())
    assert m["target"] == "toy" and m["kind"] == "toy"
    (out / "report.md").unlink()
    assert "# toy" in render(out).read_text()  # re-rendered by the kind's renderer
    assert "toy_counts.csv" in compare_runs(out, out)  # the kind's table, matched on its keys
    assert [t.name for t in plan(str(p), [1, 2], None, "toy")] == ["seed1-all", "seed2-all"]
    with pytest.raises(Exception, match="Extra inputs"):  # the toy section is the toy kind's alone
        load_experiment("quickstart", {"toy": {"top": 1}})


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
     "the kernel (5.15) did not load a bpf_loop program (needs >= 5.17)", "reference"),  # else the reference
])
def test_auto_picks_bmv2_then_ebpf_then_reference(bmv2: str | None, probe: str | None, want: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _available(monkeypatch, bmv2, probe)
    name, why = registry.resolve_auto()
    assert name == want
    if bmv2:
        assert "bmv2 cannot run" in why and "not installed" in why
    if probe:
        assert "bpf_loop" in why


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
    from chimera.targets.bmv2 import TOOLS
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
    with pytest.raises(ConfigError, match="takes no option --seeds") as e:
        B.dispatch("zeroloss", seeds=(1, 2))
    assert "fidelity" in e.value.fix
    with pytest.raises(ConfigError, match="unknown benchmark"):
        B.dispatch("nope")
    assert set(B.nightly_benches()) == {"ingest", "reference", "install", "switch"}
    with pytest.raises(ValueError, match="unknown nightly benches"):
        NightlyConfig(benches=["fidelity"])
    toy = B.Bench("toy", "chimera.bench.toy", "a toy", nightly=lambda n, prior: {"toy_ratio": {"median": n / 10}},
                  metric="toy_ratio")
    monkeypatch.setitem(B.BENCHES, "toy", toy)
    cfg = NightlyConfig(benches=["toy"], repeats=5)
    assert run_benches(cfg, ({}, {})) == {"toy_ratio": {"median": 0.5}}
    sick = B.Bench("sick", "x", "needs a switch", target="ebpf", nightly=toy.nightly, metric="sick_ratio")
    monkeypatch.setitem(B.BENCHES, "sick", sick)
    assert run_benches(NightlyConfig(benches=["sick"]), ({}, {"ebpf": "no clang"})) == \
        {"sick_ratio": {"error": "no clang"}}
    assert run_benches(NightlyConfig(benches=["sick"]), ({"ebpf": "may be absent"}, {})) == {}
