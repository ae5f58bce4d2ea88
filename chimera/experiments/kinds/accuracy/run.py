"""The accuracy kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging

import pandas as pd

from chimera.experiments.kinds.accuracy import tables as T
from chimera.experiments.kinds.accuracy.config import AccuracyExperiment
from chimera.experiments.kinds.yardstick_common import baseline_settings, named_data, run_baselines, run_chimera
from chimera.experiments.stages.context import RunContext

log = logging.getLogger(__name__)


def run(ctx: RunContext[AccuracyExperiment]) -> None:
    rows = []
    st = baseline_settings(ctx)
    for nd in named_data(ctx):
        v = ctx.variants[0]
        rows.append(run_chimera(ctx, nd, v, f"{nd.name}-{v.name}", ctx.cfg.baselines.tuning))
        rows += run_baselines(ctx, nd, ctx.cfg.baselines.methods, st)
        T.ACCURACY.write(pd.DataFrame(rows), ctx.run.path)  # partial progress stays readable
    ctx.record(ctx.cfg.baselines)
