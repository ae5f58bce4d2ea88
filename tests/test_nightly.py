"""Nightly: a golden taken, a clean rerun passes, a broken reference (a flipped fusion coefficient) fails with
the regressed check named, and bad baselines/histories are named errors; report/compare/replay on real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from chimera.errors import ResultsError
from chimera.nightly.suite import NightlyConfig, nightly

from builders import ROOT, STRESS_PCAP

TINY = {"name": "tiny-nightly", "seed": 1, "target": "reference",
        "dataset": {"synthetic": {"profile": "ciciot", "flows": 150, "seed": 3, "duration_s": 20,
                                  "max_packets_per_flow": 40, "attacks": ["SCAN"], "attack_share": 0.1}},
        "rules": "rules/default.yaml", "model": {"centroids": 16, "window": 4, "epochs": 2},
        "variants": [{"name": "Chimera"}]}


@pytest.fixture
def setup(tmp_path: Path):  # type: ignore[no-untyped-def]
    exp = tmp_path / "tiny-nightly.yaml"
    exp.write_text(yaml.safe_dump(TINY))
    cfg = NightlyConfig(experiments=[(str(exp), "reference")], benches=[])
    kw = {"baseline_dir": tmp_path / "baseline", "history": tmp_path / "history.csv",
          "results_root": tmp_path / "results", "data_root": ROOT / "data"}
    return cfg, kw


def _checks(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "checks.csv")


def test_golden_then_pass_then_a_broken_reference_regresses(setup, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cfg, kw = setup
    with pytest.raises(ResultsError, match="update-baseline"):
        nightly(cfg, **kw)  # no golden yet: named, before any work
    assert not (kw["results_root"] / "nightly").exists()
    out, regressed = nightly(cfg, update_baseline=True, **kw)
    golden = json.loads((kw["baseline_dir"] / "golden.json").read_text())
    assert not regressed and golden["format_version"] == 1 and len(golden["experiments"]) == 1
    out, regressed = nightly(cfg, **kw)
    c = _checks(out)
    assert not regressed and (c[c["name"].str.contains("bit-identical")]["status"] == "pass").all()
    assert len(pd.read_csv(kw["history"])) == 2  # one F1 row per nightly
    assert any((out / "figures").glob("trend_*.png"))

    from chimera.formats.artifact import Artifact
    real = Artifact.c
    monkeypatch.setattr(Artifact, "c", lambda self, name: -real(self, name) if name == "BETA" else real(self, name))
    out, regressed = nightly(cfg, **kw)
    c = _checks(out)
    bad = c[c["status"] == "regressed"]
    assert regressed and bad["name"].str.contains("Chimera: F1 bit-identical").any()
    summary = (out / "summary.md").read_text()
    assert "REGRESSED" in summary and "Chimera: F1 bit-identical" in summary


def test_bad_baseline_and_history_are_named(setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg, kw = setup
    kw["baseline_dir"].mkdir()
    (kw["baseline_dir"] / "golden.json").write_text(json.dumps({"format_version": 0}))
    with pytest.raises(ResultsError, match="(?s)format version 0.*update-baseline"):
        nightly(cfg, **kw)
    (kw["baseline_dir"] / "golden.json").write_text(json.dumps({"format_version": 1, "experiments": {}}))
    kw["history"].write_text("run_id,time\nx,y,z,w\n\"")
    with pytest.raises(ResultsError, match=f"(?s){kw['history']}.*never restarted silently"):
        nightly(cfg, **kw)
    assert kw["history"].read_text().startswith("run_id,time")  # left as it was


def test_interrupted_nightly_appends_nothing(setup, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    cfg, kw = setup
    nightly(cfg, update_baseline=True, **kw)
    before = kw["history"].read_text()

    def interrupt(*a, **k):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr("chimera.nightly.suite.run_benches", interrupt)
    with pytest.raises(KeyboardInterrupt):
        nightly(cfg, **kw)
    assert kw["history"].read_text() == before
    failed = next((kw["results_root"] / "nightly" / ".failed").iterdir())
    assert "Interrupted** during benches" in (failed / "summary.md").read_text()


def test_bench_band_from_history() -> None:
    from chimera.nightly.checks import bench_checks
    hist = pd.DataFrame({"metric": ["switch_ratio"] * 4, "value": [0.70, 0.72, 0.71, 0.73]})
    status = {v: bench_checks({"benches": {"switch_ratio": {"median": v}}}, hist, None)[0].status
              for v in (0.715, 0.5, 0.9)}
    assert status == {0.715: "pass", 0.5: "regressed", 0.9: "improved"}
    lower = bench_checks({"benches": {"install_ebpf_live_ms": {"median": 5.0}}},
                         pd.DataFrame({"metric": ["install_ebpf_live_ms"] * 3, "value": [0.4, 0.42, 0.41]}), None)
    assert lower[0].status == "regressed"


def test_report_compare_replay_on_real_runs(tmp_path: Path) -> None:
    from chimera.experiments.load import load_experiment
    from chimera.experiments.replay import replay_pcap
    from chimera.experiments.runner import run_experiment
    from chimera.experiments.compare import compare_runs
    from chimera.experiments.render import render
    p = tmp_path / "tiny.yaml"
    p.write_text(yaml.safe_dump({**TINY, "variants": [{"name": "Chimera"}, {"name": "Neural only",
                                                                               "fusion": {"mode": "neural"}}]}))
    a = run_experiment(load_experiment(str(p)), results_root=tmp_path / "r", data_root=ROOT / "data")
    b = run_experiment(load_experiment(str(p), {"seed": 2}), results_root=tmp_path / "r", data_root=ROOT / "data")
    (a / "report.md").unlink()
    assert render(a).read_text().splitlines()[2].startswith("# tiny-nightly")  # re-rendered from the CSVs alone
    text = compare_runs(a, b)
    assert "macro_f1 Δ" in text and "## per_class.csv" in text
    with pytest.raises(ResultsError, match="refusing"):
        bad = tmp_path / "r" / "tiny-nightly" / ".x.partial"
        bad.mkdir()
        (bad / "manifest.json").write_text(json.dumps({"status": "running"}))
        compare_runs(a, bad)
    out = replay_pcap(STRESS_PCAP, "reference", a, "Chimera", tmp_path / "r")
    v = pd.read_csv(out / "verdicts.csv")
    assert len(v) == 1500 and set(v["class"]) <= {*json.loads((a / "manifest.json").read_text())["dataset"]["classes"],
                                                  "(unparsed)"}
