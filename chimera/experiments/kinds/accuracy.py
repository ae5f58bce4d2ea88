"""The accuracy kind (the paper's Table 1): Chimera and every baseline on each named dataset, same split.

Writes accuracy.csv (one row per dataset x method: P/R/F1, where it ran, input
scale, model size, per-flow bits). The report renders the Table 1 layout and the
Pareto figure (F1 against per-flow state bits) from it.
"""

from __future__ import annotations

import logging

import pandas as pd

from chimera.experiments.kinds.yardstick_common import baseline_settings, named_data, run_baselines, run_chimera
from chimera.experiments.stages.context import RunContext

log = logging.getLogger(__name__)


def run(ctx: RunContext) -> None:
    rows = []
    st = baseline_settings(ctx)
    for nd in named_data(ctx):
        v = ctx.variants[0]
        rows.append(run_chimera(ctx, nd, v, f"{nd.name}-{v.name}"))
        rows += run_baselines(ctx, nd, ctx.cfg.baselines.methods, st)
        pd.DataFrame(rows).to_csv(ctx.run.path / "accuracy.csv", index=False)  # partial progress stays readable
    ctx.run.manifest["baselines"] = ctx.cfg.baselines.model_dump()
