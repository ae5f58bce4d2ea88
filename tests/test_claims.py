"""The claims ledger (docs/claims.md): every claim of the paper's Tables 1-5 and figure captions has a row with a
verdict, judged by the rules stated on the page; ``invoke reproduce`` compares a machine's ledger with it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from chimera.book import claims as C
from chimera.book import reproduce as R
from chimera.book.blocks import Book

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def book() -> Book:
    return Book.published(ROOT)


@pytest.fixture(scope="module")
def ledger(book: Book) -> list[tuple[str, list[C.Claim]]]:
    return C.ledger(book)


def test_the_papers_values_are_the_shared_transcription() -> None:
    """The project's copy of the paper's values is the one the workplace transcribed (no edits on the way)."""
    shared = ROOT.parent / "shared" / "paper" / "claims.yaml"
    if not shared.is_file():
        pytest.skip(f"{shared} is not beside this checkout")
    assert yaml.safe_load((ROOT / "paper" / "claims.yaml").read_text()) == yaml.safe_load(shared.read_text())


def test_every_row_of_the_papers_tables_has_a_claim_with_a_verdict(ledger: list[tuple[str, list[C.Claim]]]) -> None:
    p = C.paper()
    by = {title.split(":")[0]: cs for title, cs in ledger}
    claims = [c.claim for cs in by.values() for c in cs]
    for name in p["table1_accuracy"]["rows"]:
        for ds in ("PeerRush", "CICIOT", "ISCXVPN"):
            assert f"{name} macro-F1 on {ds}" in claims
    for name in p["table2_resources"]["rows"]:
        assert any(c.startswith(f"{name} stateful bits per flow") for c in claims), name
        assert f"{name} SRAM / TCAM / bus %" in claims
    for name in p["table3_ablation"]["rows"]:
        for what in ("bits per flow", "TCAM entries", "latency µs", "throughput Gbps"):
            assert f"{name}: {what}" in claims, (name, what)
        assert any(c.startswith(f"{name}: F1") for c in claims), name
    for m, dv, bits, *_ in p["table4_hyper_dim"]["rows"]:
        assert f"m={m}, d_v={dv}, {bits} bits: F1" in claims
    for eta, _, t, *_ in p["table5_hyper_cadence"]["rows"]:
        assert any(c.startswith(f"eta={eta}, T_cp={t} s: F1") for c in claims), (eta, t)
    figures = " ".join(c.claim for c in by["Figures"])
    for caption in p["figures"].values():
        assert caption in figures, caption
    for _, cs in ledger:
        for c in cs:
            assert c.kind in (C.REPRODUCED, C.NOT, C.UNTESTABLE), c
            assert c.kind == C.UNTESTABLE or c.run != "—", f"{c.claim}: a verdict with no run behind it"


def test_the_ordering_rule() -> None:
    assert C.ordering(0.03, 0.02, "x")[0] == C.REPRODUCED
    assert C.ordering(0.03, -0.02, "x")[0] == C.NOT and "reversed" in C.ordering(0.03, -0.02, "x")[1]
    assert C.ordering(0.03, 0.004, "x")[0] == C.NOT          # a tie in ours against a real gap
    assert C.ordering(0.002, -0.003, "x")[0] == C.REPRODUCED  # a tie in both
    assert C.ordering(0.002, 0.02, "x")[0] == C.NOT
    assert C.factor(30, 59)[0] == C.REPRODUCED and C.factor(30, 61)[0] == C.NOT and C.factor(30, 14)[0] == C.NOT


def test_the_page_is_the_ledger_rendered(book: Book) -> None:
    text = (ROOT / "docs" / "claims.md").read_text()
    assert C.render(book) in text


def test_a_machine_that_measured_the_same_agrees_claim_by_claim(book: Book) -> None:
    """reproduce's comparison of the published ledger with itself: every measured claim agrees; a moved value
    past its tolerance does not."""
    cmp = R.compare(book, book)
    assert len(cmp) and bool(cmp["reproduced_here"].all())
    f1 = C.Claim("Table 3", "x: F1 against Chimera's", "", "", "", C.REPRODUCED)
    bits = C.Claim("Table 3", "x: bits per flow", "", "", "", C.REPRODUCED)
    assert R.within(f1, 0.9, 0.9 + C.TIE / 2) and not R.within(f1, 0.9, 0.9 + 2 * C.TIE)
    assert R.within(bits, 100, 100 * C.FACTOR) and not R.within(bits, 100, 100 * C.FACTOR * 1.01)
    assert R.within(bits, None, 3) is None


def test_the_quick_plan_leaves_out_the_long_steps_and_says_how_long(book: Book) -> None:
    quick = R.plan(True, book.runs)
    full = R.plan(False, book.runs)
    assert {p.step.experiment for p in quick} < {p.step.experiment for p in full}
    assert "accuracy" not in {p.step.experiment for p in quick}
    for p in full:
        assert not math.isnan(p.expected_min), f"{p.step.experiment}: no published run to time it by"
        assert p.target is not None or p.why


def test_a_night_that_changes_a_verdict_says_so(tmp_path: Path) -> None:
    """The nightly's own book: tonight's stability run, edited so the paper's 24-hour claim holds, turns that
    verdict; the night's summary section names the claim and the block that moves."""
    import json
    import shutil
    import subprocess

    import pandas as pd

    from chimera.book.night import night_book
    pub = ROOT / "results" / "published" / "nightly"
    src_night = sorted(pub.glob("*/manifest.json"))[-1].parent
    src = sorted(src_night.glob("runs/stability24h/*/manifest.json"))[-1].parent
    night = tmp_path / "nightly" / "29991231-000000-local"
    run = night / "runs" / "stability24h" / "29991231-000001-reference"
    shutil.copytree(src, run)
    # tonight's runs are made from the checked-out code (so they are as fresh as the published ones they beat)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    m = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**m, "run_id": run.name, "git": {**m["git"], "commit": head}}))
    shutil.copy(src_night / "manifest.json", night / "manifest.json")
    m = json.loads((night / "manifest.json").read_text())
    (night / "manifest.json").write_text(json.dumps({**m, "run_id": night.name, "git": {**m["git"], "commit": head}}))
    s = pd.read_csv(run / "stability.csv")
    s.loc[s["configuration"] == "Chimera", ["f1_first", "f1_last", "diff_vs_static_map", "diff_vs_static_map_lo",
                                            "diff_vs_static_map_hi"]] = [0.95, 0.945, 0.02, 0.01, 0.03]
    s.to_csv(run / "stability.csv", index=False)
    nb = night_book(night, ROOT)
    assert nb.error is None
    flipped = nb.changed_verdicts[nb.changed_verdicts["claim"].str.startswith("24-hour stability")]
    assert len(flipped) == 1 and flipped["tonight_verdict"].iloc[0] == C.REPRODUCED
    assert "README.md: stability" in nb.changed_blocks and (night / "book" / "README.md").is_file()
    assert "24-hour stability" in nb.markdown() and (night / "claims.md").is_file()


def test_republish_plans_every_stale_cited_run_and_only_those() -> None:
    from chimera.book import republish as RP
    book = Book.published(ROOT)
    p = RP.plan(book)
    planned = {id(x.run) for x in p.reruns} | {id(r) for r, _ in p.elsewhere}
    for r in book.runs.newest_each():
        assert (id(r) in planned) == (not r.freshness.fresh), r.rel
    for x in p.reruns:
        assert (ROOT / "experiments" / f"{x.run.experiment}.yaml").is_file()
        assert bool(x.overrides) == bool(x.run.manifest.dataset_override)
    assert all(why for _, why in p.elsewhere)
