"""What the yardstick kinds' reports share (accuracy, resources, input_scale, hyper_dim, roc)."""

from __future__ import annotations

import pandas as pd

from chimera.report.common import data_notes
from chimera.report.run import RunView

HONESTY = ["No number from the paper appears as a result: every value here was measured in this run. The paper "
           "reports its own numbers on the real datasets; ours are on the data named above.",
           "The default rule file (rules/default.yaml) was written against the synthetic generator's attacks, so "
           "Chimera's symbolic gains on those attack classes hold by construction on synthetic data. On real data "
           "only rules learned from the training split are fair.",
           "All methods: the same training flows, the same test packets, packet-level macro-F1 over the classes "
           "present in the test split."]


MARKS = ["† software: evaluated as a float (or binarized) model in software; it does not map onto switch tables "
         "here. reference integer: an integer table implementation evaluated offline (bit-exact with what a "
         "switch computes). switch target: verdicts read from the switch's packets.",
         "Forest / Tree (yardstick): the project's yardsticks, not the paper's baselines: a 100-tree random "
         "forest and a decision tree given every input Chimera uses (ports and packet index included) on every "
         "training packet, their max_features and depth chosen on validation (the Tuning table); they say how "
         "much the data allows, not what a switch can run.",
         "‡ anomaly task: benign vs attack (two classes), threshold at the benign validation 99th percentile; not "
         "comparable with the multi-class columns."]


def _datasets(run: RunView) -> list[str]:
    out = []
    for name, ds in run.manifest.datasets.items():
        out.append(f"- **{name}**: {ds.name} ({ds.source}), {ds.packets} packets, "
                   f"{ds.flows} flows, {len(ds.classes)} classes; splits {ds.split_packets}")
        out += [f"  - {n}" for n in data_notes(ds)]
    return (["## Datasets", "", *out, ""]) if out else []


def _mark(df: pd.DataFrame) -> pd.Series:
    return df["method"] + df["kind"].map(lambda k: " †" if k == "software" else "") + \
        df["task"].map(lambda t: " ‡" if isinstance(t, str) and t != "classification" else "")
