"""The cadence kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from chimera.compile.build import compile_model
from chimera.compile.config import ema_eta_effective, ema_shifts
from chimera.experiments.kinds.base import Cell
from chimera.experiments.kinds.cadence import tables as T
from chimera.experiments.kinds.cadence.config import CadenceExperiment, CadenceSection, OperatingPoint
from chimera.experiments.kinds.stability.run import block_bins, control_for, day_hours, pooled, prepare_day
from chimera.experiments.stages.compile import slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.rules import learn_rules
from chimera.formats.artifact import Artifact
from chimera.experiments.stages.train import ModelCache, TrainedVariant, train_variant
from chimera.formats.rows import Cells
from chimera.metrics.timeseries import binned_f1, paired_by_seed, seed_mean, trace_stability, window_mean
from chimera.testbed.replay import Clock

log = logging.getLogger(__name__)


KAPPAS = np.logspace(-9, 1, 201)


def kappa_fit(cells: pd.DataFrame) -> pd.DataFrame:
    """For each kappa: how many cells the condition eta < 1/(1 + kappa*T_cp/Δt_install) classifies as the
    measured labels do (stable = not oscillating)."""
    measured = (cells["label"] != "oscillating").to_numpy()
    ratio = (cells["t_cp_s"] / (cells["install_p50_ms"] / 1e3)).to_numpy()
    eta = cells["eta_effective"].to_numpy()
    rows = []
    for k in KAPPAS:
        predicted = eta < 1.0 / (1.0 + k * ratio)
        rows.append({"kappa": float(k), "agree": int(np.sum(predicted == measured)), "cells": int(len(cells)),
                     "predicted_stable": int(predicted.sum())})
    return pd.DataFrame(rows)


@dataclasses.dataclass
class SeedModels:
    """One training seed's model and its compiled forms (by the dataplane's EMA step), made when a cell needs them."""
    trained: TrainedVariant | None = None
    arts: dict[float, Artifact] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class CadenceCell:
    """One (eta, T_cp) cell with one training seed: its row and its per-bin F1 (the unit a stopped run resumes
    at)."""
    row: Cells
    bins: pd.DataFrame


def run(ctx: RunContext[CadenceExperiment]) -> None:
    cfg = ctx.cfg
    st, cad = cfg.stability, cfg.cadence
    with ctx.timed("dataset"):
        ctx.data = data = prepare_day(ctx)
        ctx.check_classes(len(data.classes))
    with ctx.timed("rules"):
        ctx.rules = rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    v = ctx.variants[0]
    seeds = cfg.training_seeds
    test = data.test_rows
    y, hours, flow = data.y(test), day_hours(data, st, test), data.ds.flows.flow_id[test]
    rate_sim = len(data.replay_rows) / st.day_s  # packets per simulated second
    ctx.record(CadenceSection(compression=st.factor, trace_s=st.trace_s, day_hours=st.day_hours,
                              packets_per_sim_s=rate_sim, clock=ctx.replay.resolved_clock,
                              install_ms_simulated=cfg.control.reference_install_ms, seeds=seeds,
                              operating_point=OperatingPoint(eta=v.compile.ema_eta, t_cp_s=cfg.control.t_cp_s)))
    grid = cad.cells
    slow = cad.eta_of == "slow_loop"   # the swept eta is the slow loop's EMA centroid rate, not the dataplane's
    cell_rows: dict[tuple[float, float], list[Cells]] = {}
    cell_bins: dict[tuple[float, float], dict[int, pd.DataFrame]] = {}
    static_bins: dict[int, pd.DataFrame] = {}
    bins_all = []

    def scored(labels: np.ndarray, sd: int) -> pd.DataFrame:
        return binned_f1(hours * 3600, y, labels[data.test_in_replay].astype(np.int64), flow, st.bin_minutes * 60,
                         len(data.classes), st.bootstrap, sd, t_end_s=st.day_s)

    for sd in seeds:
        made = SeedModels()   # the seed's model and its compiled forms, made only for a unit not yet done

        def trained_for(sd: int = sd, made: SeedModels = made) -> TrainedVariant:
            if made.trained is None:
                with ctx.timed("train"):
                    made.trained = train_variant(data, rules, v, sd, ctx.cache if sd == cfg.seed else ModelCache())
            return made.trained

        def static_cell(sd: int = sd) -> pd.DataFrame:
            trained = trained_for()
            with ctx.timed("compile"):
                static = compile_model(trained.model, rules.rules, rules.weights, v.compile,
                                       trained.fusion.model_copy(update={"gamma": 0.0}), trained.beta,
                                       provenance={"variant": v.name, "training_seed": sd, "configuration": "Static-Map"})
            with ctx.timed("cells"):
                res = ctx.target.run(static, data.replay_table, ctx.run.path, slug(f"static-seed{sd}"), replay=ctx.replay)
            return scored(res.verdicts.label, sd)

        static_bins[sd] = ctx.unit(f"seed{sd}-static", pd.DataFrame, static_cell)
        bins_all.append(static_bins[sd].assign(eta=math.nan, t_cp_s=math.nan, seed=sd, configuration="Static-Map"))
        for eta, t_cp in tqdm(grid, desc=f"eta x T_cp (seed {sd})", unit="cell"):

            def cell(sd: int = sd, eta: float = eta, t_cp: float = t_cp, made: SeedModels = made) -> CadenceCell:
                fast = v.compile.ema_eta if slow else eta   # the dataplane's EMA step in this cell
                if fast not in made.arts:
                    trained = trained_for()
                    with ctx.timed("compile"):
                        made.arts[fast] = compile_model(trained.model, rules.rules, rules.weights,
                                                          v.compile.model_copy(update={"ema_eta": fast}),
                                                          trained.fusion, trained.beta,
                                                          provenance={"variant": v.name, "eta": fast,
                                                                      "training_seed": sd})
                art = made.arts[fast]
                # dict[str, Any]: the slow loop's overrides, validated by ControlPlaneConfig
                over: dict[str, Any] = {"centroid_update": "ema", "eta": eta} if slow else {}
                loop = control_for(cfg, "Chimera", art, t_cp_s=t_cp, **over)
                name = f"eta{eta}-tcp{t_cp:g}" if len(seeds) == 1 else f"eta{eta}-tcp{t_cp:g}-seed{sd}"
                with ctx.timed("cells"):
                    res = ctx.target.run(art, data.replay_table, ctx.run.path, slug(name), replay=ctx.replay,
                                         control=loop)
                bins = scored(res.verdicts.label, sd)
                steps = pd.DataFrame(loop.log_rows())
                inst = steps[steps["decision"] == "install"] if len(steps) else steps
                eff = ema_eta_effective(*ema_shifts(fast))
                p50 = float(inst["install_ms"].median()) if len(inst) else cfg.control.reference_install_ms
                simulated = bool(inst["install_simulated"].all()) if len(inst) else True
                return CadenceCell({
                    "eta": eta, "eta_of": cad.eta_of, "eta_effective": eta if slow else eff, "t_cp_s": t_cp,
                    "memory_depth_pkts": 1 / eff, "memory_depth_sim_s": 1 / (eff * rate_sim),
                    "memory_epochs": loop.cfg.memory_epochs, "install_p50_ms": p50, "install_simulated": simulated,
                    "budget_ratio": p50 / 1e3 / t_cp, "installs": int(len(inst)),
                    "churn_per_install": float(inst["churn"].mean()) if len(inst) else 0.0,
                    "churn_per_sim_hour": float(inst["churn"].sum()) / st.day_hours if len(inst) else 0.0,
                    "f1_mean": float(bins[bins["t_mid_h"] >= st.train_hours]["f1"].mean()),
                    "f1_last": window_mean(bins, st.day_hours - st.last_hours, st.day_hours),
                    **{k: x for k, x in res.columns().items() if k != "install_ms"}}, bins)

            done = ctx.unit(slug(f"seed{sd}-eta{eta}-tcp{t_cp:g}"), CadenceCell, cell)
            cell_rows.setdefault((eta, t_cp), []).append(done.row)
            cell_bins.setdefault((eta, t_cp), {})[sd] = done.bins
            bins_all.append(done.bins.assign(eta=eta, t_cp_s=t_cp, seed=sd, configuration="Chimera"))
    block = block_bins(st)
    cells: list[Cells] = []
    for (eta, t_cp), rows in cell_rows.items():
        bins = seed_mean(pd.concat([b.assign(configuration="Chimera", seed=sd) for sd, b in cell_bins[(eta, t_cp)].items()]))
        lab = trace_stability(bins, st.drift_step_at_hour, after_h=st.train_hours)
        row = pooled(rows, cell_bins[(eta, t_cp)], st, cfg.seed)
        dm, dlo, dhi, _, _ = paired_by_seed(cell_bins[(eta, t_cp)], static_bins, st.train_hours, block, seed=cfg.seed)
        row.update({**lab, "diff_vs_static_map": dm, "diff_vs_static_map_lo": dlo, "diff_vs_static_map_hi": dhi})
        cells.append(row)
        log.info("[cadence] eta %.3g, T_cp %gs: F1 %.4f [%.4f, %.4f] over %d seeds, vs Static-Map %+.4f [%+.4f, %+.4f]"
                 ", %s", eta, t_cp, row["f1_mean"], row["f1_mean_lo"], row["f1_mean_hi"], len(rows), dm, dlo, dhi,
                 lab["label"])
    df = pd.DataFrame(cells)
    T.CADENCE.write(df, ctx.run.path)
    T.CADENCE_BINS.write(pd.concat(bins_all, ignore_index=True), ctx.run.path)
    T.KAPPA.write(kappa_fit(df), ctx.run.path)


def cells(cfg: CadenceExperiment) -> list[Cell]:
    return [Cell(f"eta{e}-tcp{t:g}", {"cadence": {"rows": [[e, t]]}}, {"eta": e, "t_cp_s": t})
            for e, t in cfg.cadence.cells]


def resolve(cfg: CadenceExperiment, clock: Clock) -> CadenceExperiment:
    return cfg.with_compression(clock)
