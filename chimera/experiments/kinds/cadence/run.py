"""The cadence kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from chimera.compile.build import compile_model
from chimera.compile.config import ema_eta_effective, ema_shifts
from chimera.experiments.kinds.base import Cell
from chimera.experiments.kinds.cadence import tables as T
from chimera.experiments.kinds.cadence.config import CadenceExperiment, CadenceSection, OperatingPoint
from chimera.experiments.kinds.stability.run import control_for, day_hours, prepare_day
from chimera.experiments.stages.compile import slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.rules import learn_rules
from chimera.experiments.stages.train import train_variant
from chimera.metrics.timeseries import binned_f1, trace_stability, window_mean
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


def run(ctx: RunContext[CadenceExperiment]) -> None:
    cfg = ctx.cfg
    st, cad = cfg.stability, cfg.cadence
    with ctx.timed("dataset"):
        ctx.data = data = prepare_day(ctx)
        ctx.check_classes(len(data.classes))
    with ctx.timed("rules"):
        ctx.rules = rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    v = ctx.variants[0]
    with ctx.timed("train"):
        trained = train_variant(data, rules, v, cfg.seed, ctx.cache)
    test = data.test_rows
    y, hours, flow = data.y(test), day_hours(data, st, test), data.ds.flows.flow_id[test]
    rate_sim = len(data.replay_rows) / st.day_s  # packets per simulated second
    ctx.record(CadenceSection(compression=st.factor, trace_s=st.trace_s, day_hours=st.day_hours,
                              packets_per_sim_s=rate_sim, clock=ctx.replay.resolved_clock,
                              install_ms_simulated=cfg.control.reference_install_ms,
                              operating_point=OperatingPoint(eta=v.compile.ema_eta, t_cp_s=cfg.control.t_cp_s)))
    cells: list[dict[str, Any]] = []
    bins_all = []
    grid = [(e, t) for e in cad.etas for t in cad.t_cp_s]
    arts = {}
    for eta, t_cp in tqdm(grid, desc="eta x T_cp", unit="cell"):
        if eta not in arts:
            with ctx.timed("compile"):
                arts[eta] = compile_model(trained.model, rules.rules, rules.weights,
                                          v.compile.model_copy(update={"ema_eta": eta}), trained.fusion, trained.beta,
                                          provenance={"variant": v.name, "eta": eta})
        art = arts[eta]
        loop = control_for(cfg, "Chimera", art, t_cp_s=t_cp)
        with ctx.timed("cells"):
            res = ctx.target.run(art, data.replay_table, ctx.run.path, slug(f"eta{eta}-tcp{t_cp:g}"),
                                 replay=ctx.replay, control=loop)
        pred = res.verdicts.label[data.test_in_replay].astype(np.int64)
        bins = binned_f1(hours * 3600, y, pred, flow, st.bin_minutes * 60, len(data.classes), st.bootstrap, cfg.seed,
                         t_end_s=st.day_s)
        lab = trace_stability(bins, st.drift_step_at_hour, after_h=st.train_hours)
        steps = pd.DataFrame(loop.log_rows())
        inst = steps[steps["decision"] == "install"] if len(steps) else steps
        eff = ema_eta_effective(*ema_shifts(eta))
        p50 = float(inst["install_ms"].median()) if len(inst) else cfg.control.reference_install_ms
        simulated = bool(inst["install_simulated"].all()) if len(inst) else True
        cells.append({"eta": eta, "eta_effective": eff, "t_cp_s": t_cp, "memory_depth_pkts": 1 / eff,
                      "memory_depth_sim_s": 1 / (eff * rate_sim), "install_p50_ms": p50,
                      "install_simulated": simulated,
                      "budget_ratio": p50 / 1e3 / t_cp, "installs": int(len(inst)),
                      "churn_per_install": float(inst["churn"].mean()) if len(inst) else 0.0,
                      "churn_per_sim_hour": float(inst["churn"].sum()) / st.day_hours if len(inst) else 0.0,
                      "f1_mean": float(bins[bins["t_mid_h"] >= st.train_hours]["f1"].mean()),
                      "f1_last": window_mean(bins, st.day_hours - st.last_hours, st.day_hours), **lab,
                      **{k: v for k, v in res.columns().items() if k != "install_ms"}})
        bins_all.append(bins.assign(eta=eta, t_cp_s=t_cp))
        log.info("[cadence] eta %.3g (%.4g), T_cp %gs: F1 %.4f, %d installs, %s", eta, eff, t_cp,
                 cells[-1]["f1_mean"], cells[-1]["installs"], lab["label"])
    df = pd.DataFrame(cells)
    T.CADENCE.write(df, ctx.run.path)
    T.CADENCE_BINS.write(pd.concat(bins_all, ignore_index=True), ctx.run.path)
    T.KAPPA.write(kappa_fit(df), ctx.run.path)


def cells(cfg: CadenceExperiment) -> list[Cell]:
    return [Cell(f"eta{e}-tcp{t:g}", {"cadence": {"etas": [e], "t_cp_s": [t]}}, {"eta": e, "t_cp_s": t})
            for e, t in itertools.product(cfg.cadence.etas, cfg.cadence.t_cp_s)]


def resolve(cfg: CadenceExperiment, clock: Clock) -> CadenceExperiment:
    return cfg.with_compression(clock)
