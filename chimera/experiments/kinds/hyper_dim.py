"""The hyper_dim kind (Table 4 and its heatmap): m x d_v x quantization bits b. Compiled with no budget
refusal, then the measured allocation is compared with the YAML's per-flow budget; configurations over it are
marked †, measured, not asserted."""

from __future__ import annotations

import itertools
import logging
from typing import Any, Literal

import pandas as pd
from tqdm import tqdm

from chimera.experiments.config import ExperimentConfig
from chimera.experiments.kinds.input_scale import variant
from chimera.experiments.kinds.base import Cell, Kind
from chimera.experiments.kinds.yardstick_common import MultiDatasetExperiment, SweepSpec, named_data, run_chimera
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.preflight import preflight
from chimera.formats import tables as T
from chimera.report import yardsticks as report

log = logging.getLogger(__name__)
NO_REFUSAL = 2**30  # hyper_dim measures the budget; compile must not refuse first


class HyperDimExperiment(MultiDatasetExperiment):
    kind: Literal["hyper_dim"] = "hyper_dim"
    sweep: SweepSpec = SweepSpec()


def run(ctx: RunContext) -> None:
    assert isinstance(ctx.cfg, HyperDimExperiment)
    sw, base = ctx.cfg.sweep, ctx.variants[0]
    grid = list(itertools.product(sw.features, sw.d_v, sw.bits))
    variants = {(m, dv, bits): variant(base, f"Chimera-m{m}-dv{dv}-b{bits}", {"features": m, "d_v": dv},
                                        {"bits": bits, "budgets": {**base.compile.budgets.model_dump(),
                                                                   "per_flow_bits": NO_REFUSAL}})
                for m, dv, bits in grid}
    preflight(ctx.target, list(variants.values()), ctx.rule_file, where=ctx.cfg.name)
    rows: list[dict[str, Any]] = []
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


def cells(cfg: ExperimentConfig) -> list[Cell]:
    assert isinstance(cfg, HyperDimExperiment)
    s = cfg.sweep
    return [Cell(f"m{m}-dv{d}-b{b}", {"sweep": {"features": [m], "d_v": [d], "bits": [b]}}, {"m": m, "d_v": d, "bits": b})
            for m, d, b in itertools.product(s.features, s.d_v, s.bits)]


KIND = Kind("hyper_dim", "Table 4: m x d_v x quantization bits against a per-flow budget", HyperDimExperiment, run,
            report.render_hyper_dim, (T.HYPER_DIM,), cells)
