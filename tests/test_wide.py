"""The wide kind (chimera.experiments.kinds.wide): a widened learning-rate search for the rows whose budgeted
choice binds at an edge, on the widened experiment's own dataset, split and seed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from chimera import paths
from chimera.baselines.budget import LR_LADDER
from chimera.experiments.kinds.wide.config import WideExperiment
from chimera.experiments.load import available, load_experiment
from chimera.experiments.runner import run_experiment

from test_experiments import TINY

#: what a wide file may say differently from the file it widens
OWN = {"name", "kind", "description", "variants", "wide", "tuning"}


def _raw(name: str) -> dict:
    return yaml.safe_load((paths.ROOT / "experiments" / f"{name}.yaml").read_text())


def test_wide_ladder_extends_the_budgets_rung_for_rung() -> None:
    cfg = load_experiment("ablation_wide")
    assert isinstance(cfg, WideExperiment)
    rates = cfg.wide.rates()
    i = rates.index(LR_LADDER[0])
    assert rates[i:i + len(LR_LADDER)] == LR_LADDER
    assert rates[0] < LR_LADDER[0] and rates[-1] > LR_LADDER[-1] and list(rates) == sorted(rates)


def test_each_wide_file_is_the_file_it_widens_but_its_rows() -> None:
    """Pairing a wide run with the widened sweep seed by seed is valid only on the same dataset, rules, model and
    seed: every other setting must be the widened file's, and every widened row one of its variants, unchanged."""
    wides = [n for n in available() if load_experiment(n).kind == "wide"]
    assert wides
    for name in wides:
        mine = _raw(name)
        theirs = _raw(mine["wide"]["widens"])
        assert {k: v for k, v in mine.items() if k not in OWN} == {k: v for k, v in theirs.items() if k not in OWN}
        for v in mine["variants"]:
            assert v in theirs["variants"], v["name"]


def test_wide_run_tries_every_rung_and_flags_its_edges(tmp_path: Path) -> None:
    cfg = json.loads(json.dumps(TINY))
    cfg.update(kind="wide", wide={"low": -2, "high": 4, "widens": "ablation"}, variants=[{"name": "Chimera"}])
    p = tmp_path / "wide.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = run_experiment(load_experiment(str(p)), target="reference", results_root=tmp_path / "results",
                         data_root=tmp_path / "data")
    t = pd.read_csv(out / "ablation.csv").set_index("variant")
    r = t.loc["Chimera"]
    tried = [float(k.split()[0].split("=")[1]) for k in str(r["validation"]).split("; ")]
    assert tried == list(LR_LADDER) and r["configs_tried"] == len(LR_LADDER) == r["scorings"]
    kept = float(str(r["chosen"]).split()[0].split("=")[1])
    assert ("grid's" in str(r["at_edge"])) == (kept in (tried[0], tried[-1]))
    assert 0 <= r["macro_f1"] <= 1
    report = (out / "report.md").read_text()
    assert "Validation macro-F1 by learning rate" in report and (out / "figures" / "wide_ladder.png").exists()
