"""Experiment configs, the runner end to end on the reference target, budgets, results layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from chimera.errors import BudgetError, ConfigError, DatasetError
from chimera.experiments.load import available, load_experiment
from chimera.experiments.runner import run_experiment

from builders import TINY_MULTICLASS

TINY = {
    "name": "tiny", "seed": 2,
    "dataset": {"synthetic": {"profile": "ciciot", "flows": 160, "seed": 2, "duration_s": 20,
                              "attacks": ["SYN_FLOOD"], "attack_share": 0.1, "max_packets_per_flow": 40}},
    "model": {"centroids": 16, "window": 4, "epochs": 2},
    "variants": [{"name": "Chimera"}, {"name": "Exact softmax", "model": {"attention": "softmax"}},
                 {"name": "Batch", "model": {"aggregation": "batch"}}],
}


def tiny(tmp_path: Path, **over: object) -> Path:
    cfg = json.loads(json.dumps(TINY))
    cfg.update(over)
    p = tmp_path / "tiny.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def run(tmp_path: Path, path: Path, overrides: dict | None = None) -> Path:
    cfg = load_experiment(str(path), overrides)
    return run_experiment(cfg, target="reference", results_root=tmp_path / "results", data_root=tmp_path / "data")


def test_shipped_experiments_validate() -> None:
    assert {"quickstart", "ablation"} <= set(available())
    for name in available():
        load_experiment(name)


def test_runner_writes_complete_results_deterministically(tmp_path: Path) -> None:
    p = tiny(tmp_path)
    a, b = run(tmp_path, p), run(tmp_path, p)
    assert a != b and a.parent == b.parent  # a second run never overwrites the first
    for d in (a, b):
        for f in ("manifest.json", "config.yaml", "ablation.csv", "metrics.csv", "per_class.csv", "confusion.csv",
                  "packets.csv.gz", "flows.csv", "report.md", "figures/confusion.png", "artifacts/chimera.json",
                  "artifacts/chimera.h"):
            assert (d / f).exists(), f
    ta, tb = pd.read_csv(a / "ablation.csv"), pd.read_csv(b / "ablation.csv")
    assert ta["macro_f1"].tolist() == tb["macro_f1"].tolist()
    assert ta["artifact_sha256"].fillna("").tolist() == tb["artifact_sha256"].fillna("").tolist()
    m = json.loads((a / "manifest.json").read_text())
    assert m["status"] == "complete" and m["git"]["commit"] and m["environment"]["packages"]["torch"]
    soft = ta.set_index("variant").loc["Exact softmax"]
    assert bool(soft["software_only"]) and np.isnan(soft["bits_per_flow"])
    chim = ta.set_index("variant").loc["Chimera"]
    assert 0.5 < chim["float_int_agreement"] <= 1.0  # quantization loss is reported, not hidden
    batch = ta.set_index("variant").loc["Batch"]
    assert batch["bits_per_flow"] < chim["bits_per_flow"]  # no accumulators: only the ring
    assert batch["macro_f1"] == chim["macro_f1"]  # the same integers, re-summed (docs/pipeline.md step 5)
    report = (a / "report.md").read_text()
    assert "Exact softmax †" in report and "float_int_agreement" in report
    assert not list((tmp_path / "results" / "tiny").glob(".*.partial"))


def test_variants_under_the_budget_each_score_the_same_configurations(tmp_path: Path) -> None:
    """With ``tuning: full`` every variant is trained as Table 1's methods are (chimera.baselines.budget): the same
    number of validation scorings as every method, the kept configuration and its epochs recorded, a choice at the
    grid's edge flagged. Without it, the epochs are recorded and nothing claims a budget."""
    from chimera.baselines.budget import CONFIGS, EPOCH_CAP
    out = run(tmp_path, tiny(tmp_path, tuning="full", variants=TINY["variants"][:2]))
    t = pd.read_csv(out / "ablation.csv").set_index("variant")
    assert (t["configs_tried"] == CONFIGS).all() and (t["scorings"] == CONFIGS).all()
    assert (t["epoch_cap"] == EPOCH_CAP).all()
    assert t["stopped_by"].isin(["patience", "cap"]).all() and (t["epochs_run"] >= 1).all()
    for r in t.itertuples():
        tried = [k.split(": ")[0] for k in str(r.validation).split("; ")]
        assert len(set(tried)) == CONFIGS and tried[:2] == ["lr=0.003 batch_size=512", "lr=0.02 batch_size=512"]
        assert r.chosen in tried
        # a kept configuration at the lowest or highest learning rate tried says so, an interior one does not
        lrs = sorted(float(k.split()[0].split("=")[1]) for k in tried)
        kept = float(str(r.chosen).split()[0].split("=")[1])
        assert ("grid's" in str(r.at_edge)) == (kept in (lrs[0], lrs[-1])), r
    assert t["edge_binds"].isin([True, False]).all()
    plain = pd.read_csv(run(tmp_path, tiny(tmp_path, variants=TINY["variants"][:1])) / "ablation.csv")
    assert plain["epochs_run"].iloc[0] >= 1 and "configs_tried" not in plain


def test_budget_violation_fails_cleanly_and_keeps_earlier_results(tmp_path: Path) -> None:
    p = tiny(tmp_path)
    good = run(tmp_path, p)
    before = sorted(x.name for x in good.rglob("*"))
    with pytest.raises(BudgetError, match=r"per-flow state bits.*> limit 32") as ei:
        run(tmp_path, p, {"compile": {"budgets": {"per_flow_bits": 32}}})
    assert "fix:" in str(ei.value)
    with pytest.raises(BudgetError, match="table memory N_entries\\*b of 'map'"):
        run(tmp_path, p, {"compile": {"budgets": {"table_bits": 200_000}}})
    assert sorted(x.name for x in good.rglob("*")) == before
    failed = list((tmp_path / "results" / "tiny" / ".failed").iterdir())
    assert len(failed) == 2
    assert json.loads((failed[0] / "manifest.json").read_text())["status"] == "failed"
    complete = [d for d in (tmp_path / "results" / "tiny").iterdir() if not d.name.startswith(".")]
    assert complete == [good]


@pytest.mark.parametrize("over, match", [
    ({"model": {"attention": "cosine"}}, "attention: Input should be 'prf', 'rff' or 'softmax'"),
    ({"model": {"window": 6}}, "window must be a power of two"),
    ({"variants": [{"name": "x", "model": {"keys": "sparse"}}]}, "variant 'x'.*keys"),
    ({"colour": "red"}, "colour: Extra inputs are not permitted"),
    ({"compile": {"flow_slots": 1000}}, "flow_slots: Value error, must be a power of two"),
])
def test_config_errors_name_the_field(tmp_path: Path, over: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as ei:
        load_experiment(str(tiny(tmp_path, **over)))
    assert "tiny.yaml" in str(ei.value)


def test_unknown_experiment_lists_available() -> None:
    with pytest.raises(ConfigError, match="available: .*quickstart"):
        load_experiment("no-such-experiment")


def test_dense_needs_prf(tmp_path: Path) -> None:
    p = tiny(tmp_path, variants=[{"name": "bad", "model": {"keys": "dense", "attention": "rff"}}])
    with pytest.raises(ConfigError, match="keys=dense needs attention=prf"):
        load_experiment(str(p))


def test_one_class_dataset_is_rejected(tmp_path: Path) -> None:
    from chimera.data.adapters import normalize
    ds = normalize("folders", TINY_MULTICLASS, tmp_path / "norm")
    labels = np.load(ds / "labels.npy")
    np.save(ds / "labels.npy", np.zeros_like(labels))  # everything one class
    man = json.loads((ds / "manifest.json").read_text())
    man["classes"] = ["ONLY"]
    (ds / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(DatasetError, match="one class"):
        run(tmp_path, tiny(tmp_path), {"dataset": {"path": str(ds), "synthetic": None}})


def test_empty_split_is_rejected(tmp_path: Path) -> None:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    src = tmp_path / "raw"
    for k, cls in enumerate(("A", "B")):  # two flows per class: too few for a 75/10/15 split
        (src / cls).mkdir(parents=True)
        wrpcap(str(src / cls / "x.pcap"), [Ether() / IP(src=f"10.0.{k}.{f}", dst="10.9.9.9") / UDP(sport=1000 + i, dport=53)
                                           for f in (1, 2) for i in range(1)])
    with pytest.raises(DatasetError, match="split has no classifiable packets") as ei:
        run(tmp_path, tiny(tmp_path), {"dataset": {"path": str(src), "synthetic": None}})
    assert "more flows" in str(ei.value)


def _majority_f1(out: Path) -> float:
    """The macro-F1 of always answering the test split's most common class (the floor a classifier must
    clear), from the run's own per-class table."""
    pc = pd.read_csv(out / "per_class.csv")
    support = pc.groupby("class")["support"].first()
    return float(2 * (support.max() / support.sum()) / (1 + support.max() / support.sum()) / len(support))


def test_bundled_captures_through_dataset_override(tmp_path: Path) -> None:
    """The override path on captures every clone has (pcaps/tiny-multiclass): the run classifies them, well
    above answering the most common class (macro-F1 of the majority answer + 0.1). Ten epochs: after tiny()'s
    two, F1 on these 123 test packets moves by more than that margin with any change to the inputs."""
    model = {"centroids": 16, "window": 4, "epochs": 10}
    out = run(tmp_path, tiny(tmp_path, variants=[{"name": "Chimera"}], model=model),
              {"dataset": {"path": str(TINY_MULTICLASS), "synthetic": None}})
    t = pd.read_csv(out / "ablation.csv")
    assert json.loads((out / "manifest.json").read_text())["dataset"]["classes"] == ["Vuze", "eMule", "uTorrent"]
    assert t["macro_f1"].iloc[0] > _majority_f1(out) + 0.1  # a tiny model (tiny()), still well above it


def test_real_sample_through_dataset_override(tmp_path: Path, sample_dir: Path) -> None:
    out = run(tmp_path, tiny(tmp_path, variants=[{"name": "Chimera"}]),
              {"dataset": {"path": str(sample_dir), "synthetic": None}})
    t = pd.read_csv(out / "ablation.csv")
    assert t["macro_f1"].iloc[0] > _majority_f1(out) + 0.1  # a tiny model (tiny()), still well above it
    assert "far too small to reproduce" in (out / "report.md").read_text()
    assert json.loads((out / "manifest.json").read_text())["dataset"]["classes"] == [
        "ALEXA_PLAY", "ALEXA_STOP", "LAN_PLAY", "LAN_STOP", "POWER"]


def test_imprecise_hard_rule_is_dropped_and_cascade_never_below_neural(tmp_path: Path) -> None:
    """A hard rule that mislabels most of what it decides is not installed (named in a warning), and the
    compiled fusion scores at least neural-only on validation."""
    from chimera.experiments.stages.dataset import prepare, resolve_dataset
    from chimera.experiments.stages.rules import learn_rules
    from chimera.experiments.stages.train import ModelCache, train_variant
    from chimera.experiments.config import resolve_variants
    from chimera.metrics.classification import macro_f1
    from chimera.rules.spec import load_rules
    bad = tmp_path / "rules.yaml"
    bad.write_text("hard:\n  - {name: all_tcp_is_syn_flood, label: SYN_FLOOD, match: {proto: tcp}}\n"
                   "  - {name: syn_flood_no_options, label: SYN_FLOOD,\n"
                   "     match: {proto: tcp, tcp_flags: {set: [SYN], unset: [ACK]}, ip_len: 40}}\n")
    cfg = load_experiment(str(tiny(tmp_path)))
    data = prepare(resolve_dataset(cfg.dataset, tmp_path / "data"), cfg.seed)
    learned = learn_rules(load_rules(bad), data, cfg.seed, 0.9)
    assert learned.dropped == ["all_tcp_is_syn_flood"]
    assert [r.name for r in learned.rules.hard] == ["syn_flood_no_options"]
    assert learned.hard_precision["all_tcp_is_syn_flood"][1] < 0.5
    v = resolve_variants(cfg)[0]
    tv = train_variant(data, learned, v, cfg.seed, ModelCache())
    from chimera.model.config import FusionConfig
    from chimera.model.fusion import float_fused
    y_val, s_val = data.y(data.val_rows), tv.fitted.scores("val")
    chosen = macro_f1(y_val, float_fused(s_val, learned.fires["val"], learned.weights, learned.hard["val"],
                                         tv.fusion, tv.beta))
    neural = macro_f1(y_val, float_fused(s_val, learned.fires["val"], learned.weights, learned.hard["val"],
                                         FusionConfig(mode="neural"), 0.0))
    assert chosen >= neural


@pytest.mark.parametrize("over, match", [
    ({"dataset": {"synthetic": {"profile": "ciciot", "drift": -0.5}}}, "drift: Input should be greater than"),
    ({"dataset": {"synthetic": {"profile": "ciciot", "attacks": ["NUKE"]}}}, r"unknown attack\(s\) \['NUKE'\]"),
    ({"dataset": {"path": "/x", "adapter": "nope"}}, "unknown adapter 'nope'"),
    ({"variants": []}, "variants: List should have at least 1 item"),
    ({"name": "../x"}, "not a plain name: it would write outside results/"),
    ({"name": ".hidden"}, "not a plain name"),
])
def test_every_config_mistake_is_named_before_any_work(tmp_path: Path, over: dict, match: str) -> None:
    cfg = json.loads(json.dumps(TINY))
    if "dataset" in over:
        cfg["dataset"] = over.pop("dataset")
    cfg.update(over)
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=match) as ei:
        load_experiment(str(p))
    assert "bad.yaml" in str(ei.value) and "fix:" in str(ei.value)
    assert not (tmp_path / "results").exists() and not (tmp_path / "data").exists()


def test_top_level_list_is_a_named_error(tmp_path: Path) -> None:
    p = tmp_path / "list.yaml"
    p.write_text("- name: a\n- name: b\n")
    with pytest.raises(ConfigError, match="top level is a list"):
        load_experiment(str(p), {"dataset": {"path": "/x", "synthetic": None}})


def test_results_root_full_disk_is_a_named_error(tmp_path: Path) -> None:
    """A results directory on a full disk: a ResultsError naming the directory and space, no traceback, and the
    results written before are untouched."""
    import subprocess
    from chimera.errors import ResultsError
    mnt = tmp_path / "tiny-disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=150k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mnt / "results" / "tiny").mkdir(parents=True)
        keep = mnt / "results" / "tiny" / "earlier-run"
        keep.mkdir()
        (keep / "manifest.json").write_text('{"status": "complete"}')
        cfg = load_experiment(str(tiny(tmp_path, variants=[{"name": "Chimera"}])))
        with pytest.raises(ResultsError, match=r"no space left on the disk of .*tiny-disk.*MiB free") as ei:
            run_experiment(cfg, target="reference", results_root=mnt / "results", data_root=tmp_path / "data")
        assert "fix:" in str(ei.value)
        assert (keep / "manifest.json").read_text() == '{"status": "complete"}'
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_report_says_what_was_run_and_accounts_for_every_packet(tmp_path: Path) -> None:
    """--dataset replaces the experiment's data: the title and notes say so; every packet is in one category."""
    from builders import STRESS_PCAP
    src = tmp_path / "raw"
    for cls, files in (("A", [STRESS_PCAP]), ("B", sorted(TINY_MULTICLASS.rglob("*.pcap"))[:2])):
        (src / cls).mkdir(parents=True)
        for i, f in enumerate(files):
            shutil.copy(f, src / cls / f"{i}.pcap")
    cfg = load_experiment(str(tiny(tmp_path, variants=[{"name": "Chimera"}])),
                          {"dataset": {"path": str(src), "adapter": "folders", "synthetic": None}})
    out = run_experiment(cfg, target="reference", results_root=tmp_path / "results", data_root=tmp_path / "data",
                         dataset_override=str(src))
    m = json.loads((out / "manifest.json").read_text())
    acc = m["dataset"]["accounting"]
    assert sum(acc.values()) == m["dataset"]["packets"]
    assert acc["not classified: IPv6 (the dataplanes parse IPv4)"] > 0 and acc["not classified: IP fragment"] > 0
    report = (out / "report.md").read_text()
    first, _, title = report.splitlines()[:3]
    assert first.startswith("Target **reference** (asked for) · clock **trace**")  # what ran, why, which clock
    assert title == "# tiny on folders:raw" and f"run here on `{src}` (--dataset)" in report
    assert "small synthetic" not in title and "## Packet accounting" in report
    assert f"--dataset {src}" in report
