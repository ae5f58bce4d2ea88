"""The input_scale and hyper_dim kinds: Chimera (and, for input_scale, the sequence baselines) swept.

- input_scale: F1 against the window L (packets per decision) for Chimera and the
  sequence baselines, with the per-flow state each L costs.
- hyper_dim (Table 4 and its heatmap): m x d_v x quantization bits b. Compiled with
  no budget refusal, then the measured allocation is compared with the YAML's
  per-flow budget; configurations over it are marked †, measured, not asserted.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pandas as pd
from tqdm import tqdm

from chimera.baselines.zoo import BaselineSettings
from chimera.compile.config import CompileConfig
from chimera.experiments.config import ResolvedVariant
from chimera.experiments.kinds.yardstick_common import named_data, run_baselines, run_chimera
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.target import preflight
from chimera.model.config import ModelConfig

log = logging.getLogger(__name__)
NO_REFUSAL = 2**30  # hyper_dim measures the budget; compile must not refuse first


def _variant(base: ResolvedVariant, name: str, model: dict[str, Any], compile: dict[str, Any]) -> ResolvedVariant:
    return ResolvedVariant(name=name, group=base.group,
                           model=ModelConfig.model_validate({**base.model.model_dump(), **model}),
                           compile=CompileConfig.model_validate({**base.compile.model_dump(), **compile}),
                           fusion=base.fusion)


def run_input_scale(ctx: RunContext) -> None:
    sw, base = ctx.cfg.sweep, ctx.variants[0]
    variants = {L: _variant(base, f"Chimera-L{L}", {"window": L}, {}) for L in sw.windows}
    preflight(ctx.target, list(variants.values()), ctx.rule_file, where=ctx.cfg.name)
    b = ctx.cfg.baselines
    rows: list[dict[str, Any]] = []
    for nd in named_data(ctx):
        for L in tqdm(sw.windows, desc=f"{nd.name}: window", unit="L"):
            r = run_chimera(ctx, nd, variants[L], f"{nd.name}-Chimera-L{L}")
            rows.append({**r, "window": L})
            st = BaselineSettings(window=L, epochs=b.epochs, max_train_packets=b.max_train_packets)
            rows += [{**x, "window": L} for x in run_baselines(ctx, nd, sw.sequence_baselines, st)]
            pd.DataFrame(rows).to_csv(ctx.run.path / "input_scale.csv", index=False)


def run_hyper_dim(ctx: RunContext) -> None:
    sw, base = ctx.cfg.sweep, ctx.variants[0]
    grid = list(itertools.product(sw.features, sw.d_v, sw.bits))
    variants = {(m, dv, bits): _variant(base, f"Chimera-m{m}-dv{dv}-b{bits}", {"features": m, "d_v": dv},
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
            pd.DataFrame(rows).to_csv(ctx.run.path / "hyper_dim.csv", index=False)
    df = pd.DataFrame(rows)
    df["budget_bits"] = sw.per_flow_budget_bits
    df["budget_ratio"] = df["per_flow_bits"] / sw.per_flow_budget_bits
    df["over_budget"] = df["per_flow_bits"] > sw.per_flow_budget_bits
    df["aggregated_state_kib"] = df["per_flow_bits"] * base.compile.flow_slots / 8 / 1024
    df.to_csv(ctx.run.path / "hyper_dim.csv", index=False)
