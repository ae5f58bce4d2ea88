"""The accuracy kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from chimera.experiments.kinds.accuracy import tables as T
from chimera.experiments.kinds.accuracy.config import AccuracyExperiment
from chimera.experiments.kinds.yardstick_common import baseline_settings, named_data, run_baselines, run_chimera
from chimera.experiments.stages.context import RunContext
from chimera.metrics.intervals import flow_bootstrap_f1

log = logging.getLogger(__name__)


def run(ctx: RunContext[AccuracyExperiment]) -> None:
    rows = []
    boots = []
    st = baseline_settings(ctx)
    for nd in named_data(ctx):
        v = ctx.variants[0]
        preds: dict[str, np.ndarray] = {}
        rows.append(run_chimera(ctx, nd, v, f"{nd.name}-{v.name}", ctx.cfg.baselines.tuning, preds))
        rows += run_baselines(ctx, nd, ctx.cfg.baselines.methods, st, preds)
        T.ACCURACY.write(pd.DataFrame(rows), ctx.run.path)  # partial progress stays readable
        d = nd.data
        # every method on the same resamples of the test flows (drawn with one fixed seed: the same resamples in
        # every run on this partition), for the ledger's intervals (chimera.book.rules.flow_paired_interval)
        boots.append(flow_bootstrap_f1(d.y(d.test_rows), preds, d.ds.flows.flow_id[d.test_rows])
                     .assign(dataset=nd.name))
        T.BOOT.write(pd.concat(boots, ignore_index=True), ctx.run.path)
    ctx.record(ctx.cfg.baselines)
