"""The results archive has a rule and a budget (chimera/report/archive.py): the published tree holds the newest
run of each experiment, target and data (more where a page reads more, each saying why), within its budget; what
leaves it keeps its manifest and a row in the experiment's history."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from chimera.formats.rundir import Manifest
from chimera.report import archive as A

ROOT = Path(__file__).resolve().parents[1]


def test_the_published_tree_follows_the_rule_within_its_budget() -> None:
    assert A.plan() == [], "run `invoke prune` (the archive rule) and commit what it moved"
    assert A.tree_bytes() <= A.BUDGET_BYTES, f"results/published is {A.tree_bytes() / 2**20:.1f} MiB"
    for exp, keep in A.POLICY.items():   # every exception (how many stay, or how targets are keyed) says why
        assert keep.why and (keep.newest is None or keep.newest > 1 or keep.target is not None or keep.per_python), exp


def _two_runs(tmp: Path, experiment: str, data: str | None = None) -> tuple[Path, list[Path]]:
    """A published tree with the newest published run of ``experiment`` (on ``data``, where given: the archive's
    key of its data) copied twice, as two runs of one key."""
    runs = sorted(p.parent for p in (ROOT / "results" / "published" / experiment).glob("*/manifest.json")
                  if data is None or A.data_of(Manifest.read(p)) == data)
    assert runs, (experiment, data)
    pub = tmp / "published"
    out = []
    for i, src in enumerate([runs[-1], runs[-1]]):
        m = Manifest.read(src / "manifest.json")
        m.run_id = f"2020010{i + 1}-000000-{m.target}"           # older first
        dst = pub / experiment / m.run_id
        shutil.copytree(src, dst)
        (dst / "manifest.json").write_text(m.model_dump_json(indent=2))
        out.append(dst)
    return pub, out


def test_an_older_run_leaves_the_tree_for_its_history(tmp_path: Path) -> None:
    pub, (old, new) = _two_runs(tmp_path, "roc")
    hist = tmp_path / "history"
    assert [r.path for r in A.plan(pub)] == [old]
    gone = A.prune(pub, hist, tmp_path)
    assert gone == [old] and not old.exists() and new.exists()
    assert (hist / "roc" / f"{old.name}.json").is_file()
    idx = pd.read_csv(hist / "roc" / "index.csv", dtype=str)
    assert list(idx["run_id"]) == [old.name] and any(c.startswith("roc:") for c in idx.columns)
    assert A.plan(pub) == []
    assert list(A.history_table("roc", hist)["run_id"]) == [old.name]


def test_a_retired_night_stays_in_the_dashboards_history(tmp_path: Path) -> None:
    from chimera.nightly.history import published_history
    pub, (old, new) = _two_runs(tmp_path, "nightly")
    before = published_history(pub / "nightly", tmp_path / "none")
    A.prune(pub, tmp_path / "history", tmp_path)
    after = published_history(pub / "nightly", tmp_path / "history" / "nightly")
    assert set(after["run_id"]) == set(before["run_id"]) == {old.name, new.name}


def test_sweeps_over_other_data_are_other_keys(tmp_path: Path) -> None:
    """A sweep of the accuracy experiment on the synthetic sets does not retire the sweep on the real sets (the
    book judges each set from the newest sweep that holds it); a second sweep on the same sets does."""
    pub, (old, new) = _two_runs(tmp_path, "sweep-accuracy", data="ciciot2022-sonos,suricata-zeek-apps")
    assert [r.path for r in A.plan(pub)] == [old]
    m = Manifest.read(new / "manifest.json")
    m.sections["sweep"]["datasets"] = None      # the experiment's own (synthetic) datasets
    (new / "manifest.json").write_text(m.model_dump_json(indent=2))
    assert A.plan(pub) == []
    assert A.data_of(Manifest.read(old / "manifest.json")) == "ciciot2022-sonos,suricata-zeek-apps"


def test_a_sweep_on_its_experiments_target_retires_one_that_named_it(tmp_path: Path) -> None:
    """A sweep left on its experiment's own target (folder ``default``) whose tasks ran on the reference measures
    what a sweep asked for ``--target reference`` did: the newer retires the older. Tasks on another target, or on
    several, keep the sweep a key of its own."""
    pub, (old, new) = _two_runs(tmp_path, "sweep-accuracy")
    m = Manifest.read(old / "manifest.json")
    ran = {t["manifest"]["target"] for t in m.sections["sweep"]["tasks"]}
    assert m.target == "default" and ran == {"reference"}, (m.target, ran)
    m.target = "reference"
    (old / "manifest.json").write_text(m.model_dump_json(indent=2))
    assert [r.path for r in A.plan(pub)] == [old]
    n = Manifest.read(new / "manifest.json")
    n.sections["sweep"]["tasks"][0]["manifest"]["target"] = "ebpf"
    (new / "manifest.json").write_text(n.model_dump_json(indent=2))
    assert A.target_of(n) == "default" and A.plan(pub) == []


def test_a_kernel_release_rebuilt_replaces_its_verifier_column(tmp_path: Path) -> None:
    """The verifier matrix has one column per kernel release: a run on a rebuild of this machine's kernel (another
    build tag, same release) retires the older one; a run on another release is a column of its own."""
    assert A.kernel_release("k6.18.44-fc-v782") == A.kernel_release("k6.18.44-fc-v657") == "k6.18.44"
    assert A.kernel_release("k6.1.0-56-amd64") == "k6.1.0" != A.kernel_release("k6.12.118-deb13-amd64")
    pub, (old, new) = _two_runs(tmp_path, "bench-verifier")
    for d, label in ((old, "k6.18.44-fc-v782"), (new, "k6.18.44-fc-v657")):
        m = Manifest.read(d / "manifest.json")
        m.target = label
        (d / "manifest.json").write_text(m.model_dump_json(indent=2))
    assert [r.path for r in A.plan(pub)] == [old]
    m = Manifest.read(new / "manifest.json")
    m.target = "k6.12.118-deb13-amd64"
    (new / "manifest.json").write_text(m.model_dump_json(indent=2))
    assert A.plan(pub) == []


def test_a_suite_record_on_another_python_keeps_the_first_ones_place(tmp_path: Path) -> None:
    """The suite block states the newest record on each Python: a run on 3.12 leaves 3.11's in the tree, and a
    newer run on the same Python (another patch release) retires the older."""
    pub, (old, new) = _two_runs(tmp_path, "bench-suite")
    for d, py in ((old, "3.11.2"), (new, "3.11.7")):
        m = Manifest.read(d / "manifest.json")
        m.environment["python"] = py
        (d / "manifest.json").write_text(m.model_dump_json(indent=2))
    assert [r.path for r in A.plan(pub)] == [old]
    m = Manifest.read(new / "manifest.json")
    m.environment["python"] = "3.12.1"
    (new / "manifest.json").write_text(m.model_dump_json(indent=2))
    assert A.plan(pub) == []


def test_a_days_run_on_a_switch_leaves_for_its_switch_run(tmp_path: Path) -> None:
    """A stability day's own run on eBPF is retired by a newer ``<day>_switch`` run on eBPF (the day's switch check
    moved there), never by one on another target, and never the day's reference run (seen failing with the rule
    taken out of ``plan``)."""
    pub = tmp_path / "published"

    def run(experiment: str, run_id: str, target: str) -> Path:
        src = next((ROOT / "results" / "published" / "stability24h").glob("*/manifest.json")).parent
        m = Manifest.read(src / "manifest.json")
        m.experiment, m.run_id, m.target, m.dataset_override = experiment, run_id, target, None
        dst = pub / experiment / run_id
        dst.mkdir(parents=True)
        (dst / "manifest.json").write_text(m.model_dump_json(indent=2))
        return dst
    day_ebpf = run("stability24h", "20200101-000000-ebpf", "ebpf")
    run("stability24h", "20200101-000001-reference", "reference")
    run("stability24h_switch", "20200102-000000-bmv2", "bmv2")
    assert A.plan(pub) == []
    run("stability24h_switch", "20200102-000000-ebpf", "ebpf")
    assert [r.path for r in A.plan(pub)] == [day_ebpf]
