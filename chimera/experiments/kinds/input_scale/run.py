"""The input_scale kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd
from tqdm import tqdm

from chimera.baselines.zoo import BaselineSettings
from chimera.compile.config import CompileConfig
from chimera.experiments.config import ResolvedVariant
from chimera.experiments.kinds.base import Cell
from chimera.experiments.kinds.input_scale import tables as T
from chimera.experiments.kinds.input_scale.config import InputScaleExperiment
from chimera.experiments.kinds.yardstick_common import named_data, run_baselines, run_chimera
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.preflight import preflight
from chimera.formats.rows import Cells
from chimera.model.config import ModelConfig

log = logging.getLogger(__name__)


# dict[str, Any]: YAML overlay: model and compile overrides, validated by the models
def variant(base: ResolvedVariant, name: str, model: dict[str, Any], compile: dict[str, Any]) -> ResolvedVariant:
    return ResolvedVariant(name=name, group=base.group,
                           model=ModelConfig.model_validate({**base.model.model_dump(), **model}),
                           compile=CompileConfig.model_validate({**base.compile.model_dump(), **compile}),
                           fusion=base.fusion)


def run(ctx: RunContext[InputScaleExperiment]) -> None:
    sw, base = ctx.cfg.sweep, ctx.variants[0]
    variants = {L: variant(base, f"Chimera-L{L}", {"window": L}, {}) for L in sw.windows}
    preflight(ctx.target, list(variants.values()), ctx.rule_file, where=ctx.cfg.name)
    b = ctx.cfg.baselines
    rows: list[Cells] = []
    for nd in named_data(ctx):
        for L in tqdm(sw.windows, desc=f"{nd.name}: window", unit="L"):
            r = run_chimera(ctx, nd, variants[L], f"{nd.name}-Chimera-L{L}", b.tuning)
            rows.append({**r, "window": L})
            st = BaselineSettings.like(base.model, window=L, tuning=b.tuning)
            rows += [{**x, "window": L} for x in run_baselines(ctx, nd, sw.sequence_baselines, st)]
            T.INPUT_SCALE.write(pd.DataFrame(rows), ctx.run.path)


def cells(cfg: InputScaleExperiment) -> list[Cell]:
    return [Cell(f"L{w}", {"sweep": {"windows": [w]}}, {"window": w}) for w in cfg.sweep.windows]
