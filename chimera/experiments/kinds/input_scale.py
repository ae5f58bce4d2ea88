"""The input_scale kind: F1 against the window L (packets per decision) for Chimera and the sequence
baselines, with the per-flow state each L costs."""

from __future__ import annotations

import logging
from typing import Any, Literal

import pandas as pd
from tqdm import tqdm

from chimera.baselines.zoo import BaselineSettings
from chimera.compile.config import CompileConfig
from chimera.experiments.config import ExperimentConfig, ResolvedVariant
from chimera.experiments.kinds.base import Cell, Kind
from chimera.experiments.kinds.yardstick_common import (BaselinesSpec, MultiDatasetExperiment, SweepSpec, named_data,
                                                        run_baselines, run_chimera)
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.preflight import preflight
from chimera.formats import tables as T
from chimera.model.config import ModelConfig
from chimera.report import yardsticks as report

log = logging.getLogger(__name__)


class InputScaleExperiment(MultiDatasetExperiment):
    kind: Literal["input_scale"] = "input_scale"
    baselines: BaselinesSpec = BaselinesSpec()
    sweep: SweepSpec = SweepSpec()


def variant(base: ResolvedVariant, name: str, model: dict[str, Any], compile: dict[str, Any]) -> ResolvedVariant:
    return ResolvedVariant(name=name, group=base.group,
                           model=ModelConfig.model_validate({**base.model.model_dump(), **model}),
                           compile=CompileConfig.model_validate({**base.compile.model_dump(), **compile}),
                           fusion=base.fusion)


def run(ctx: RunContext) -> None:
    assert isinstance(ctx.cfg, InputScaleExperiment)
    sw, base = ctx.cfg.sweep, ctx.variants[0]
    variants = {L: variant(base, f"Chimera-L{L}", {"window": L}, {}) for L in sw.windows}
    preflight(ctx.target, list(variants.values()), ctx.rule_file, where=ctx.cfg.name)
    b = ctx.cfg.baselines
    rows: list[dict[str, Any]] = []
    for nd in named_data(ctx):
        for L in tqdm(sw.windows, desc=f"{nd.name}: window", unit="L"):
            r = run_chimera(ctx, nd, variants[L], f"{nd.name}-Chimera-L{L}")
            rows.append({**r, "window": L})
            st = BaselineSettings.like(base.model, window=L, leo_depth=b.leo_depth, leo_window=b.leo_window)
            rows += [{**x, "window": L} for x in run_baselines(ctx, nd, sw.sequence_baselines, st)]
            T.INPUT_SCALE.write(pd.DataFrame(rows), ctx.run.path)




def cells(cfg: ExperimentConfig) -> list[Cell]:
    assert isinstance(cfg, InputScaleExperiment)
    return [Cell(f"L{w}", {"sweep": {"windows": [w]}}, {"window": w}) for w in cfg.sweep.windows]


KIND = Kind("input_scale", "F1 against the window L, Chimera and the sequence baselines", InputScaleExperiment, run,
            report.render_input_scale, (T.INPUT_SCALE,), cells)
