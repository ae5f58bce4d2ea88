"""The widened searches (chimera.baselines.budget.WIDE, ``tuning: wide``): the check on rows whose budgeted choice
binds at an edge, on the widened experiment's own dataset, split and seeds, Chimera included."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from chimera import paths
from chimera.baselines import budget as B
from chimera.baselines.zoo import BaselineSettings, run_baseline
from chimera.experiments.load import available, load_experiment
from chimera.experiments.runner import run_experiment

from builders import quickstart_artifact
from test_experiments import TINY

#: what a wide file may say differently from the file it widens (``<name>_wide`` widens ``<name>``)
OWN = {"name", "description", "variants", "tuning", "baselines"}


def _raw(name: str) -> dict:
    return yaml.safe_load((paths.ROOT / "experiments" / f"{name}.yaml").read_text())


def _axis(search: B.Search) -> dict[str, list]:
    if search.ladder is not None:
        return {search.ladder.param: list(search.ladder.values)}
    return {p: sorted({c[p] for c in search.configs()}, key=str) for p in search.params if p != "batch_size"}


def test_every_widened_search_holds_the_budgets_and_reaches_past_both_ends() -> None:
    """The same number of configurations for every method, as the budget's rule; each holds every value of the
    method's budgeted search, and on a numeric axis goes below and above it (seen failing with the tree's 32 left
    out of its widened depths)."""
    assert set(B.WIDE) == set(B.SEARCHES)
    for name, wide in B.WIDE.items():
        assert len(wide.configs()) == B.WIDE_CONFIGS > B.CONFIGS, name
        mine, theirs = _axis(wide), _axis(B.SEARCHES[name])
        for p, values in theirs.items():
            assert set(values) <= set(mine[p]), (name, p)
            nums = [v for v in values if not isinstance(v, str)]
            wider = [v for v in mine[p] if not isinstance(v, str)]
            if len(nums) >= 2:
                assert min(wider) < min(nums) and max(wider) > max(nums), (name, p)
        assert B.search_of(name, "wide") == (wide, "full") and B.search_of(name, "full") == (B.SEARCHES[name], "full")
    i = B.WIDE_LADDER.index(B.LR_LADDER[0])
    assert B.WIDE_LADDER[i:i + len(B.LR_LADDER)] == B.LR_LADDER   # the same formula, rung for rung


def test_each_wide_file_is_the_file_it_widens_but_its_rows() -> None:
    """Pairing a wide run with the widened sweep seed by seed is valid only on the same datasets, rules, model and
    seed: every other setting must be the widened file's, and every widened row one of its variants, unchanged."""
    wides = [n for n in available() if n.endswith("_wide")]
    assert {"ablation_wide", "accuracy_wide"} <= set(wides)
    for name in wides:
        mine, theirs = _raw(name), _raw(name.removesuffix("_wide"))
        assert load_experiment(name).model_dump().get("tuning", None) == "wide" or mine["baselines"]["tuning"] == "wide"
        assert {k: v for k, v in mine.items() if k not in OWN} == {k: v for k, v in theirs.items() if k not in OWN}
        for v in mine.get("variants", []):
            assert v in theirs["variants"], v["name"]


def test_a_wide_variants_run_tries_every_rung(tmp_path: Path) -> None:
    cfg = json.loads(json.dumps(TINY))
    cfg.update(tuning="wide", variants=[{"name": "Chimera"}])
    p = tmp_path / "wide.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = run_experiment(load_experiment(str(p)), target="reference", results_root=tmp_path / "results",
                         data_root=tmp_path / "data")
    r = pd.read_csv(out / "ablation.csv").set_index("variant").loc["Chimera"]
    tried = [float(k.split()[0].split("=")[1]) for k in str(r["validation"]).split("; ")]
    assert tried == list(B.WIDE_LADDER) and r["configs_tried"] == B.WIDE_CONFIGS == r["scorings"]
    kept = float(str(r["chosen"]).split()[0].split("=")[1])
    assert ("grid's" in str(r["at_edge"])) == (kept in (tried[0], tried[-1]))


def test_a_wide_baseline_tries_its_whole_widened_grid() -> None:
    d = quickstart_artifact().data
    r = run_baseline("Leo", d.ds, d.tokens, (d.train_rows, d.val_rows, d.test_rows), len(d.classes), [],
                     BaselineSettings(window=4, max_train_packets=4000, tuning="wide"), 1, {})
    assert r.extra["configs_tried"] == B.WIDE_CONFIGS
    assert [k.split(": ")[0] for k in str(r.extra["validation"]).split("; ")] == \
        [B.Search.label(c) for c in B.WIDE["Leo"].configs()]
