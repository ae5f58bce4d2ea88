"""Report rows that explain themselves: ablation rows say why they coincide or where they ran; simulated install
times and the stability differences are labelled as what they are."""

from __future__ import annotations

import numpy as np
import pandas as pd

from chimera.experiments.stages.metrics import VariantResult, row_notes


def _r(name: str, pred: list[int], **row: object) -> VariantResult:
    base = {"variant": name, "software_only": False, "executed_on": "ebpf", "target_fallback": "",
            "aggregation": "incremental", "fusion": "cascade", "hard_rule_hits": 0}
    return VariantResult({**base, **row}, pd.DataFrame(), pd.DataFrame(), None, np.array(pred))


def test_row_notes_explain_coinciding_rows() -> None:
    rs = [_r("Chimera", [0, 1, 2]), _r("Batch recompute", [0, 1, 2], aggregation="batch",
                                        target_fallback="the batch form runs on the reference only"),
          _r("Dense", [0, 1, 1], software_only=True, executed_on="software classifier host sc (float)"),
          _r("Soft fusion", [0, 1, 2], fusion="soft"), _r("Neural only", [2, 1, 0], fusion="neural")]
    row_notes(rs)
    notes = {r.row["variant"]: r.row["row_note"] for r in rs}
    assert notes["Chimera"] == "" and notes["Neural only"] == ""
    assert notes["Batch recompute"].startswith("not on the switch: the batch form")
    assert "identical to 'Chimera' by construction" in notes["Batch recompute"]
    assert notes["Dense"] == "cannot run in a switch: software classifier host sc (float)"
    assert "no hard rule fires on this test split" in notes["Soft fusion"]


def test_soft_row_with_hard_hits_says_so() -> None:
    rs = [_r("Chimera", [0, 1]), _r("Soft fusion", [0, 1], fusion="soft", hard_rule_hits=7)]
    row_notes(rs)
    assert "fire on 7 test packets" in rs[1].row["row_note"]


def test_neural_row_equal_to_a_fusion_with_beta_zero_says_why() -> None:
    rs = [_r("Chimera", [0, 1], beta=0.0, hard_rule_hits=12), _r("Neural only", [0, 1], fusion="neural", beta=0.5),
          _r("Other", [1, 1], beta=0.25), _r("Neural again", [1, 1], fusion="neural")]
    row_notes(rs)
    assert "validation picked beta = 0 for 'Chimera'" in rs[1].row["row_note"]
    assert "fire on 12 test packets" in rs[1].row["row_note"]
    assert rs[3].row["row_note"] == "verdicts identical to 'Other' on every test packet"  # beta 0.25: no such claim


def test_simulated_install_times_are_labelled() -> None:
    from chimera.report.common import label_simulated
    df = pd.DataFrame({"configuration": ["Chimera", "Fast-Only"], "install_p50_ms": [5.0, np.nan],
                       "budget_ratio": [0.1, np.nan], "install_simulated": [True, False]})
    shown, note = label_simulated(df)
    assert "install_p50_ms (simulated)" in shown and "budget_ratio (simulated)" in shown and note
    measured, none = label_simulated(df.assign(install_simulated=False))
    assert "install_p50_ms" in measured and not none


def test_stability_report_shows_both_paired_differences() -> None:
    from chimera.experiments.kinds.stability.render import _differences
    s = pd.DataFrame({"configuration": ["Chimera", "Fast-Only"], "diff_vs_fast_only": [-0.0005, np.nan],
                      "diff_vs_fast_only_lo": [-0.0041, np.nan], "diff_vs_fast_only_hi": [0.0029, np.nan],
                      "diff_vs_static_map": [0.0058, np.nan], "diff_vs_static_map_lo": [0.0004, np.nan],
                      "diff_vs_static_map_hi": [0.0108, np.nan]})
    text = "\n".join(_differences(s))  # a run from before differences.csv: the Chimera row's two
    assert "| Chimera − Fast-Only | the slow loop's own effect | -0.0005 | [-0.0041, +0.0029] |" in text
    assert "| Chimera − Static-Map | both timescales together | +0.0058 | [+0.0004, +0.0108] |" in text
    d = pd.DataFrame({"a": ["Prior-Only"], "b": ["Static-Map"], "measures": ["the prior-shift correction alone"],
                      "diff": [-0.0125], "lo": [-0.0215], "hi": [-0.0048], "seeds": [3], "block_hours": [3.0],
                      "verdict": ["a < b"]})
    text = "\n".join(_differences(s, d))
    assert "paired by training seed and time bin (3 seeds)" in text
    assert "| Prior-Only − Static-Map | the prior-shift correction alone | -0.0125 | [-0.0215, -0.0048] | 3 | a < b |" in text
    assert "blocks of 3 h" in text      # a run with a fixed block length says which
    chosen = "\n".join(_differences(s, d.assign(block_chosen=[True], block_hours=[2.0])))
    assert "| 2 | a < b |" in chosen and "Politis and White" in chosen


def test_the_ablation_report_shows_latency_and_rate_beside_f1(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """As the paper's ablation table does: the results table of a testbed ablation has the in-switch latency and
    the switch's rate per row (a published eBPF run, re-rendered from its CSVs in a copy)."""
    import shutil
    from pathlib import Path

    from chimera.experiments.render import render
    src = sorted((Path(__file__).resolve().parents[1] / "results" / "published" / "ablation").glob("*-ebpf"))[-1]
    run = tmp_path / "ablation" / src.name
    shutil.copytree(src, run)
    text = render(run).read_text()
    results = text.split("## Results")[1].split("## Figures")[0]
    header = results.splitlines()[2]
    for col in ("macro_f1", "bits_per_flow", "latency_switch_p50_us", "latency_switch_p99_us", "switch_pps"):
        assert col in header, col
