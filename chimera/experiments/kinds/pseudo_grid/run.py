"""The pseudo_grid kind's run: the stability day through each pseudo-label arm at every (gate, cap) cell.

Per day realization and training seed the day's model is trained and compiled once (the stability kind's
``build_models``); each arm's control runs once, each arm once per cell. A cell's loop is the arm's own slow loop
(``control_for``: the same control settings the stability days run) with only the gate quantile and the churn
cap replaced, so the default cell is the stability day's Pseudo-Label or Chimera+Pseudo row, bit for bit.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

import numpy as np
import pandas as pd
from tqdm import tqdm

from chimera.baselines.budget import edges
from chimera.controlplane.pseudo import PseudoLabelConfig, PseudoLoop
from chimera.experiments.kinds.pseudo_grid import tables as T
from chimera.experiments.kinds.pseudo_grid.config import (PseudoGridExperiment, PseudoGridSection, control_of,
                                                           default_cell)
from chimera.experiments.kinds.stability.run import (block_bins, build_models, control_for, day_hours, drop_captures,
                                                     each_day, pooled, prepare_day, summarize)
from chimera.experiments.stages.compile import slug
from chimera.experiments.stages.context import RunContext
from chimera.formats.rows import Cells
from chimera.metrics.days import paired_by_unit
from chimera.metrics.timeseries import binned_f1
from chimera.testbed.replay import Clock

log = logging.getLogger(__name__)

Cell = tuple[float, int]
Unit = tuple[int, int]   # (day realization, training seed)


AXES = ("gate_quantile", "max_entries")


def label(cell: Cell, axes: tuple[int, ...] = (0, 1)) -> str:
    """A cell as the tuner's edge rule reads a configuration (chimera.baselines.budget.edges), on ``axes``."""
    return " ".join(f"{AXES[i]}={cell[i]:g}" for i in axes)


def own_limits(cell: Cell, global_entries: int) -> dict[int, str]:
    """The axes on which ``cell`` sits at the setting's own end: a gate at quantile 0 passes every verdict (no
    gate), a cap of one entry is the least that changes anything, a cap at or above the global layer's entries caps
    nothing. A choice there cannot be widened past."""
    q, cap = cell
    out = {0: f"gate_quantile={q:g} is no gate"} if q == 0 else {}
    if cap == 1:
        out[1] = f"max_entries={cap} is one entry per install"
    elif cap >= global_entries:
        out[1] = f"max_entries={cap} caps nothing (the global layer holds {global_entries} entries)"
    return out


def edge_of(pick: Cell, diffs: Mapping[Cell, float], global_entries: int) -> tuple[str, bool]:
    """Where the chosen cell sits at an end of the grid, and whether that end binds: the tuner's rule
    (``edges``: validation still rises toward an end, by more than its tie band) on each axis whose end is not the
    setting's own; an own end is named and never binds (nothing lies beyond it)."""
    limits = own_limits(pick, global_entries)
    free = tuple(i for i in range(len(AXES)) if i not in limits)
    edge, binds = "", False
    if free:
        held = {c: d for c, d in diffs.items() if all(c[i] == pick[i] for i in limits)}
        edge, binds = edges(label(pick, free), {label(c, free): d for c, d in held.items()})
    return "; ".join(x for x in (edge, *limits.values()) if x), binds


def choose(diffs: Mapping[Cell, float]) -> Cell:
    """The validation run's choice, fixed before any run of this kind: the cell whose mean F1 difference from the
    arm's control (after the training hours, over the validation days and seeds) is highest; an exact tie keeps the
    loop's default cell, then the earlier cell of the grid."""
    best = max(diffs.values())
    tied = [c for c, d in diffs.items() if d == best]
    return default_cell() if default_cell() in tied else tied[0]


def run(ctx: RunContext[PseudoGridExperiment]) -> None:
    cfg = ctx.cfg
    st, spec = cfg.stability, cfg.pseudo_grid
    grid, days, seeds = spec.grid, cfg.day_seeds, cfg.training_seeds
    with ctx.timed("dataset"):
        ctx.data = data = prepare_day(ctx)
        ctx.check_classes(len(data.classes))
    rows: dict[tuple[str, Cell | None], list[Cells]] = {}
    bins: dict[tuple[str, Cell | None], dict[Unit, pd.DataFrame]] = {}
    global_entries = 0
    for day, day_cfg, data, rules in each_day(ctx, data):
        test = data.test_rows
        y, hours, flow = data.y(test), day_hours(data, st, test), data.ds.flows.flow_id[test]

        def scored(labels: np.ndarray, sd: int) -> pd.DataFrame:
            return binned_f1(hours * 3600, y, labels[data.test_in_replay].astype(np.int64), flow,
                             st.bin_minutes * 60, len(data.classes), st.bootstrap, sd, t_end_s=st.day_s)

        for sd in seeds:
            models = build_models(ctx, data, rules, sd, f"-day{day}")
            global_entries = len(models.static.global_table)
            runs: list[tuple[str, Cell | None]] = [(c, None) for c in cfg.controls] + \
                [(a, cell) for a in cfg.arms for cell in grid]
            for conf, cell in tqdm(runs, desc=f"pseudo grid (day {day}, seed {sd})", unit="replay"):
                art = models.artifact(conf)
                loop = control_for(day_cfg, conf, art)
                if cell is not None:
                    assert isinstance(loop, PseudoLoop), f"{conf} runs no pseudo-label loop"
                    loop = dataclasses.replace(loop, pseudo=loop.pseudo.model_copy(
                        update={"gate_quantile": cell[0], "max_entries": cell[1]}))
                name = slug("-".join([conf, *([f"q{cell[0]:g}-c{cell[1]}"] if cell else []), f"day{day}",
                                      f"seed{sd}"]))
                with ctx.timed(f"target:{conf}"):
                    res = ctx.target.run(art, data.replay_table, ctx.run.path, name, replay=ctx.replay, control=loop)
                drop_captures(ctx.run.path / "replay", name)
                b = scored(res.verdicts.label, sd)
                bins.setdefault((conf, cell), {})[(day, sd)] = b
                rows.setdefault((conf, cell), []).append({
                    **summarize(conf, b, loop, st, loop.cfg.t_cp_s, res.columns()), "seed": sd, "day": day,
                    **({"gate_quantile": cell[0], "max_entries": cell[1]} if cell else {})})
    ctx.record(PseudoGridSection(compression=st.factor, trace_s=st.trace_s, day_hours=st.day_hours,
                                 t_cp_s=cfg.control.t_cp_s, t_cp_trace_s=cfg.control.t_cp_s / st.factor,
                                 clock=ctx.replay.resolved_clock,
                                 install_ms_simulated=cfg.control.reference_install_ms, seeds=seeds, days=days,
                                 role=spec.role, default_gate_quantile=default_cell()[0],
                                 default_max_entries=default_cell()[1], global_entries=global_entries))
    T.UNITS.write(pd.DataFrame([r for rs in rows.values() for r in rs]), ctx.run.path)
    T.GRID.write(grid_table(cfg, rows, bins, global_entries), ctx.run.path)


def grid_table(cfg: PseudoGridExperiment, rows: Mapping[tuple[str, Cell | None], list[Cells]],
               bins: Mapping[tuple[str, Cell | None], Mapping[Unit, pd.DataFrame]],
               global_entries: int) -> pd.DataFrame:
    """One row per arm and cell, paired with the arm's control; on validation days, each arm's choice marked."""
    st = cfg.stability
    out = []
    for arm in cfg.arms:
        ctl = control_of(arm)
        mine: list[Cells] = []
        diffs: dict[Cell, float] = {}
        for cell in cfg.pseudo_grid.grid:
            r = pooled(rows[(arm, cell)], bins[(arm, cell)], st, cfg.seed)
            m, lo, hi, n, nd, blk = paired_by_unit(bins[(arm, cell)], bins[(ctl, None)], st.train_hours,
                                                   block_bins(st), seed=cfg.seed)
            r.update({"arm": arm, "control": ctl, "gate_quantile": cell[0], "max_entries": cell[1],
                      "default": cell == default_cell(), "diff": m, "lo": lo, "hi": hi, "units": n, "days": nd,
                      "block_hours": blk * st.bin_minutes / 60, "chosen": False, "at_edge": "",
                      "edge_binds": False})
            mine.append(r)
            diffs[cell] = m
        if cfg.pseudo_grid.role == "validation":
            pick = choose(diffs)
            edge, binds = edge_of(pick, diffs, global_entries)
            for cell, r in zip(cfg.pseudo_grid.grid, mine):
                if cell == pick:
                    r.update({"chosen": True, "at_edge": edge, "edge_binds": binds})
            log.info("[pseudo_grid] %s: validation chose %s (%+.4f against %s; the default %s: %+.4f)%s", arm,
                     label(pick), diffs[pick], ctl, label(default_cell()), diffs[default_cell()],
                     f"; at an edge: {edge}" if edge else "")
        out += mine
    return pd.DataFrame(out).drop(columns=["configuration", "seeds"], errors="ignore")


def resolve(cfg: PseudoGridExperiment, clock: Clock) -> PseudoGridExperiment:
    return cfg.with_compression(clock)
