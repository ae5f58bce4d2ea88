"""The accuracy kind (the paper's Table 1): Chimera and every baseline on each named dataset, same split.

Writes accuracy.csv (one row per dataset x method: P/R/F1, where it ran, input
scale, model size, per-flow bits). The report renders the Table 1 layout and the
Pareto figure (F1 against per-flow state bits) from it.
"""

from __future__ import annotations

import logging
from typing import Literal

import pandas as pd

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.yardstick_common import (BaselinesSpec, MultiDatasetExperiment, baseline_settings,
                                                        named_data, run_baselines, run_chimera)
from chimera.experiments.stages.context import RunContext
from chimera.formats import tables as T
from chimera.report import yardsticks as report

log = logging.getLogger(__name__)


class AccuracyExperiment(MultiDatasetExperiment):
    kind: Literal["accuracy"] = "accuracy"
    baselines: BaselinesSpec = BaselinesSpec()


def run(ctx: RunContext) -> None:
    assert isinstance(ctx.cfg, AccuracyExperiment)
    rows = []
    st = baseline_settings(ctx)
    for nd in named_data(ctx):
        v = ctx.variants[0]
        rows.append(run_chimera(ctx, nd, v, f"{nd.name}-{v.name}"))
        rows += run_baselines(ctx, nd, ctx.cfg.baselines.methods, st)
        T.ACCURACY.write(pd.DataFrame(rows), ctx.run.path)  # partial progress stays readable
    ctx.run.manifest.record(baselines=ctx.cfg.baselines.model_dump())


KIND = Kind("accuracy", "Table 1: Chimera against the paper's baselines and the yardsticks, per dataset",
            AccuracyExperiment, run, report.render_accuracy, (T.ACCURACY,))
