"""The toy kind's run: the testbed classifies the test split; count its verdicts per class."""

from __future__ import annotations

import pandas as pd

from chimera.experiments.kinds.testbed_model import build_model
from chimera.experiments.kinds.toy import tables as T
from chimera.experiments.kinds.toy.config import ToyExperiment, ToySection
from chimera.experiments.stages.context import RunContext


def run(ctx: RunContext[ToyExperiment]) -> None:
    built = build_model(ctx, "toy counts")
    data = built.data
    res = ctx.target.run(built.art, data.replay_table, ctx.run.path, "toy", replay=ctx.replay)
    pred = res.verdicts.label[data.test_in_replay]
    labels = [data.classes[i] for i in pred if i < len(data.classes)]
    s = pd.Series(labels).value_counts().head(ctx.cfg.toy.top)
    x = res.columns()
    T.COUNTS.write(pd.DataFrame({"label": s.index, "packets": s.to_numpy(), "share": s.to_numpy() / max(len(pred), 1),
                                 "lost": x.get("lost"), "reference_mismatches": x.get("reference_mismatches"),
                                 "register_mismatches": x.get("register_mismatches")}), ctx.run.path)
    ctx.record(ToySection(classes_seen=int(s.size)))
