"""The accuracy kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pandas as pd

from chimera.experiments.kinds.accuracy import tables as T
from chimera.experiments.kinds.accuracy.config import AccuracyExperiment
from chimera.experiments.kinds.yardstick_common import (NamedData, baseline_settings, named_data, run_baselines,
                                                       run_chimera)
from chimera.experiments.stages.compile import slug
from chimera.experiments.stages.context import RunContext
from chimera.formats.rows import Cells
from chimera.metrics.intervals import flow_bootstrap_f1

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class DatasetRows:
    """One dataset's rows (Chimera's and every baseline's) and its flow-bootstrap resamples: the unit a stopped
    run resumes at."""
    rows: list[Cells]
    boot: pd.DataFrame


def run(ctx: RunContext[AccuracyExperiment]) -> None:
    rows: list[Cells] = []
    boots = []
    st = baseline_settings(ctx)
    for nd in named_data(ctx):

        def one(nd: NamedData = nd) -> DatasetRows:
            v = ctx.variants[0]
            preds: dict[str, np.ndarray] = {}
            mine = [run_chimera(ctx, nd, v, f"{nd.name}-{v.name}", ctx.cfg.baselines.tuning, preds)]
            mine += run_baselines(ctx, nd, ctx.cfg.baselines.methods, st, preds)
            d = nd.data
            # every method on the same resamples of the test flows (drawn with one fixed seed: the same resamples
            # in every run on this partition), for the ledger's intervals (chimera.book.rules.flow_paired_interval)
            return DatasetRows(mine, flow_bootstrap_f1(d.y(d.test_rows), preds, d.ds.flows.flow_id[d.test_rows])
                               .assign(dataset=nd.name))

        done = ctx.unit(slug(f"dataset-{nd.name}"), DatasetRows, one)
        rows += done.rows
        T.ACCURACY.write(pd.DataFrame(rows), ctx.run.path)  # partial progress stays readable
        boots.append(done.boot)
        T.BOOT.write(pd.concat(boots, ignore_index=True), ctx.run.path)
    ctx.record(ctx.cfg.baselines)
