"""The hyper_dim kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import itertools
import logging

import pandas as pd
from tqdm import tqdm

from chimera.experiments.kinds.base import Cell
from chimera.experiments.kinds.hyper_dim import tables as T
from chimera.experiments.kinds.hyper_dim.config import HyperDimExperiment
from chimera.experiments.kinds.input_scale.run import variant
from chimera.experiments.kinds.yardstick_common import named_data, run_chimera
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.preflight import preflight
from chimera.formats.rows import Cells

log = logging.getLogger(__name__)


NO_REFUSAL = 2**30  # hyper_dim measures the budget; compile must not refuse first


def run(ctx: RunContext[HyperDimExperiment]) -> None:
    sw, base = ctx.cfg.sweep, ctx.variants[0]
    grid = list(itertools.product(sw.features, sw.d_v, sw.bits))
    variants = {(m, dv, bits): variant(base, f"Chimera-m{m}-dv{dv}-b{bits}", {"features": m, "d_v": dv},
                                        {"bits": bits, "budgets": {**base.compile.budgets.model_dump(),
                                                                   "per_flow_bits": NO_REFUSAL}})
                for m, dv, bits in grid}
    preflight(ctx.target, list(variants.values()), ctx.rule_file, where=ctx.cfg.name)
    rows: list[Cells] = []
    for nd in named_data(ctx):
        for (m, dv, bits), v in tqdm(variants.items(), desc=f"{nd.name}: m x d_v x b", unit="config"):
            r = run_chimera(ctx, nd, v, f"{nd.name}-m{m}-dv{dv}-b{bits}")
            rows.append({**r, "m": m, "d_v": dv, "bits": bits,
                         "operating_point": (m, dv, bits) == (base.model.features, base.model.d_v, base.compile.bits)})
            T.HYPER_DIM.write(pd.DataFrame(rows), ctx.run.path)
    df = pd.DataFrame(rows)
    df["budget_bits"] = sw.per_flow_budget_bits
    df["budget_ratio"] = df["per_flow_bits"] / sw.per_flow_budget_bits
    df["over_budget"] = df["per_flow_bits"] > sw.per_flow_budget_bits
    df["aggregated_state_kib"] = df["per_flow_bits"] * base.compile.flow_slots / 8 / 1024
    T.HYPER_DIM.write(df, ctx.run.path)


def cells(cfg: HyperDimExperiment) -> list[Cell]:
    s = cfg.sweep
    return [Cell(f"m{m}-dv{d}-b{b}", {"sweep": {"features": [m], "d_v": [d], "bits": [b]}}, {"m": m, "d_v": d, "bits": b})
            for m, d, b in itertools.product(s.features, s.d_v, s.bits)]
