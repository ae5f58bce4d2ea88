"""The stability kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from chimera.compile.build import compile_model
from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.loop import SlowLoop
from chimera.controlplane.offline import run_controlled
from chimera.data.dataset import TIME_BASE_NS
from chimera.experiments.config import DatasetSpec
from chimera.experiments.kinds.stability import tables as T
from chimera.experiments.kinds.stability.config import StabilityExperiment, StabilitySection, StabilitySpec
from chimera.experiments.stages.compile import save_artifact, slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData, prepare, record_dataset, resolve_dataset
from chimera.experiments.stages.rules import LearnedRules, learn_rules
from chimera.experiments.stages.train import TrainedVariant, train_variant
from chimera.formats.artifact import Artifact
from chimera.metrics.timeseries import binned_f1, paired_difference, window_mean
from chimera.testbed.replay import Clock

log = logging.getLogger(__name__)




CONFIGURATIONS = {
    "Chimera": "fast path (class-EMA prior) + slow loop (Map tables re-fitted and installed live)",
    "Fast-Only": "fast path (class-EMA prior), no control-plane installs",
    "Static-Map": "neither: the compiled tables all day, no prior",
}


#: slow-loop variants run on the reference when stability.diagnose (what each part of the loop does)
DIAGNOSES: dict[str, dict[str, Any]] = {
    "as configured": {},
    "no re-binning": {"rebin": "off"},
    "re-bin fine bins too": {"rebin": "all"},
    "no re-clustering": {"recluster": False},
    "install every step (tau 0)": {"tau_map": 0.0},
}


def day_dataset(cfg: StabilityExperiment) -> DatasetSpec:
    """The experiment's synthetic dataset laid on the day (times in the YAML are simulated hours)."""
    st = cfg.stability
    syn = cfg.the_dataset().synthetic
    assert syn is not None
    c = st.factor
    syn = syn.model_copy(update={
        "duration_s": st.trace_s,
        "attack_at_s": None if st.attack_at_hour is None else st.attack_at_hour * 3600 / c,
        "drift_step_at_s": None if st.drift_step_at_hour is None else st.drift_step_at_hour * 3600 / c})
    return cfg.the_dataset().model_copy(update={"synthetic": syn})


#: a stability day's config, or one built on it (the cadence kind's)
SE = TypeVar("SE", bound=StabilityExperiment)


def prepare_day(ctx: RunContext[SE]) -> PreparedData:
    """The day's data: the time split, and every packet replayed."""
    cfg = ctx.cfg
    st = cfg.stability
    ds = resolve_dataset(day_dataset(cfg), ctx.data_root)
    train_until = TIME_BASE_NS + int(st.train_hours * 3600 / st.factor * 1e9)
    data = prepare(ds, cfg.seed, train_until_ns=train_until)
    data = dataclasses.replace(data, replay_rows=np.arange(len(ds.table)))
    record_dataset(ctx.run.manifest, data, f"by time: flows starting in the first {st.train_hours:g} simulated hours "
                   f"split 75/10/15 (seed {cfg.seed}), every later flow is test; the whole day is replayed")
    return data


def day_hours(data: PreparedData, st: StabilitySpec, rows: np.ndarray) -> np.ndarray:
    """Simulated time of day (hours) of packets ``rows``."""
    return (data.ds.table.ts_ns[rows] - TIME_BASE_NS) / 1e9 * st.factor / 3600


@dataclasses.dataclass(frozen=True)
class DayModels:
    """The day's model compiled twice: with the fast-path prior (Chimera, Fast-Only) and without."""

    trained: TrainedVariant
    fast: Artifact
    static: Artifact

    def artifact(self, configuration: str) -> Artifact:
        return self.static if configuration == "Static-Map" else self.fast


def build_models(ctx: RunContext[SE], data: PreparedData, rules: LearnedRules) -> DayModels:
    v = ctx.variants[0]
    with ctx.timed("train"):
        trained = train_variant(data, rules, v, ctx.cfg.seed, ctx.cache)
    with ctx.timed("compile"):
        prov = {"dataset_sha256": data.ds.manifest.get("packets_sha256"), "variant": v.name}
        fast = compile_model(trained.model, rules.rules, rules.weights, v.compile, trained.fusion, trained.beta,
                             provenance={**prov, "configuration": "Chimera / Fast-Only"})
        static = compile_model(trained.model, rules.rules, rules.weights, v.compile,
                               trained.fusion.model_copy(update={"gamma": 0.0}), trained.beta,
                               provenance={**prov, "configuration": "Static-Map"})
    if fast.c("GAMMA") == 0:
        log.warning("fusion.gamma is 0: Chimera and Fast-Only run without the fast-path prior")
    save_artifact(fast, ctx.run.path / "artifacts", "day-fast-path")
    save_artifact(static, ctx.run.path / "artifacts", "day-static")
    return DayModels(trained, fast, static)


def control_for(cfg: StabilityExperiment, configuration: str, art: Artifact, **over: Any) -> SlowLoop:
    cp = cfg.control.model_copy(update={"enabled": configuration == "Chimera" and cfg.control.enabled, **over})
    return SlowLoop(art, ControlPlaneConfig.model_validate(cp.model_dump()), compression=cfg.stability.factor)


def summarize(configuration: str, bins: pd.DataFrame, loop: SlowLoop, st: StabilitySpec, t_cp_s: float,
              columns: dict[str, Any]) -> dict[str, Any]:
    """One row of stability.csv."""
    steps = pd.DataFrame(loop.log_rows())
    inst = steps[steps["decision"] == "install"] if len(steps) else steps
    after = bins[bins["t_mid_h"] >= st.train_hours]
    dt = inst["install_ms"].to_numpy() if len(inst) else np.zeros(0)
    measured = inst["install_ms_measured"].dropna().to_numpy() if len(inst) else np.zeros(0)
    row: dict[str, Any] = {
        "configuration": configuration, "f1_mean": float(after["f1"].mean()),
        "f1_worst_bin": float(after["f1"].min()), "f1_first": window_mean(bins, 0, st.train_hours),
        "f1_last": window_mean(bins, st.day_hours - st.last_hours, st.day_hours),
        "installs": int(len(inst)),
        "failed_installs": int((steps["decision"] == "failed").sum()) if len(steps) else 0,
        "churn_total": int(inst["churn"].sum()) if len(inst) else 0,
        "churn_per_install": float(inst["churn"].mean()) if len(inst) else float("nan"),
        "install_p50_ms": float(np.percentile(dt, 50)) if dt.size else float("nan"),
        "install_p99_ms": float(np.percentile(dt, 99)) if dt.size else float("nan"),
        "install_simulated": bool(len(inst) and inst["install_simulated"].all()),
        "install_measured_p50_ms": float(np.percentile(measured, 50)) if measured.size else float("nan"),
    }
    row["f1_drop"] = row["f1_first"] - row["f1_last"]
    row["budget_ratio"] = row["install_p50_ms"] / 1e3 / t_cp_s
    row["budget_ratio_replay"] = row["install_p50_ms"] / 1e3 / (t_cp_s / st.factor)
    out = {**row, **{k: v for k, v in columns.items() if k != "install_ms"}}
    if "install_ms" in columns:
        out["load_ms"] = columns["install_ms"]
    return out


def _differences(rows: list[dict[str, Any]], bins: dict[str, pd.DataFrame], st: StabilitySpec, seed: int) -> None:
    """Chimera - Fast-Only (the slow loop's own effect) and Chimera - Static-Map (both timescales), each a mean
    over the bins after training with a 95% interval paired by time bin, on the Chimera row."""
    if "Chimera" not in bins:
        return
    row = next(r for r in rows if r["configuration"] == "Chimera")
    for other, col in (("Fast-Only", "diff_vs_fast_only"), ("Static-Map", "diff_vs_static_map")):
        if other in bins:
            m, lo, hi = paired_difference(bins["Chimera"], bins[other], st.train_hours, seed=seed)
            row.update({col: m, f"{col}_lo": lo, f"{col}_hi": hi})


def run(ctx: RunContext[StabilityExperiment]) -> None:
    cfg = ctx.cfg
    st = cfg.stability
    with ctx.timed("dataset"):
        ctx.data = data = prepare_day(ctx)
        ctx.check_classes(len(data.classes))
    ctx.record(StabilitySection(compression=st.factor, trace_s=st.trace_s, day_hours=st.day_hours,
                                t_cp_s=cfg.control.t_cp_s, t_cp_trace_s=cfg.control.t_cp_s / st.factor,
                                clock=ctx.replay.resolved_clock, install_ms_simulated=cfg.control.reference_install_ms))
    with ctx.timed("rules"):
        ctx.rules = rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
    models = build_models(ctx, data, rules)
    test = data.test_rows
    y, hours = data.y(test), day_hours(data, st, test)
    flow = data.ds.flows.flow_id[test]
    load = np.histogram(day_hours(data, st, data.replay_rows), bins=np.arange(0, st.day_hours + 1e-9,
                                                                               st.bin_minutes / 60))[0]
    bin_s = st.bin_minutes * 60
    ts = data.replay_table.ts_ns
    span_s = float(ts.max() - ts.min()) / 1e9 if len(ts) else 0.0  # what is replayed, not what was asked for
    rows: list[dict[str, Any]] = []
    all_bins: dict[str, pd.DataFrame] = {}
    logs: list[pd.DataFrame] = []
    for conf in st.configurations:
        art = models.artifact(conf)
        loop = control_for(cfg, conf, art)
        log.info("[stability] %s (%s) on %s: a %g-hour day compressed %gx (%.0f s of trace), clock %s", conf,
                 CONFIGURATIONS[conf], ctx.target.name, st.day_hours, st.factor, span_s, ctx.replay.resolved_clock)
        with ctx.timed(f"target:{conf}"):
            res = ctx.target.run(art, data.replay_table, ctx.run.path, slug(conf), replay=ctx.replay, control=loop)
        pred = res.verdicts.label[data.test_in_replay].astype(np.int64)
        bins = binned_f1(hours * 3600, y, pred, flow, bin_s, len(data.classes), st.bootstrap, cfg.seed,
                         t_end_s=st.day_s)
        bins.insert(0, "configuration", conf)
        bins["load_packets"] = load[: len(bins)]
        all_bins[conf] = bins
        rows.append(summarize(conf, bins, loop, st, cfg.control.t_cp_s, res.columns()))
        if loop.steps:
            logs.append(pd.DataFrame(loop.log_rows()).assign(configuration=conf))
        log.info("[stability] %s: mean F1 %.4f, first %.4f, last %.4f, %d installs; lost %s, %s differ", conf,
                 rows[-1]["f1_mean"], rows[-1]["f1_first"], rows[-1]["f1_last"], rows[-1]["installs"],
                 rows[-1].get("lost"), rows[-1].get("reference_mismatches"))
    _differences(rows, all_bins, st, cfg.seed)
    T.STABILITY.write(pd.DataFrame(rows), ctx.run.path)
    T.STABILITY_BINS.write(pd.concat(all_bins.values(), ignore_index=True), ctx.run.path)
    if logs:
        T.CONTROL.write(pd.concat(logs, ignore_index=True), ctx.run.path)
    if st.diagnose:
        with ctx.timed("diagnose"):
            T.DIAGNOSIS.write(diagnose(ctx, data, models, y, hours, flow), ctx.run.path)


def diagnose(ctx: RunContext[StabilityExperiment], data: PreparedData, models: DayModels, y: np.ndarray, hours: np.ndarray,
             flow: np.ndarray) -> pd.DataFrame:
    """The slow loop's parts switched off one at a time, on the reference (fast: no replay)."""
    cfg = ctx.cfg
    st = cfg.stability
    out = []
    for name, over in DIAGNOSES.items():
        loop = control_for(cfg, "Chimera", models.fast, **over)
        v, _ = run_controlled(models.fast, data.replay_table, loop)
        bins = binned_f1(hours * 3600, y, v.label[data.test_in_replay].astype(np.int64), flow, st.bin_minutes * 60,
                         len(data.classes), 0, cfg.seed, t_end_s=st.day_s)
        inst = sum(s.decision == "install" for s in loop.steps)
        out.append({"slow_loop": name, "f1_mean": float(bins[bins["t_mid_h"] >= st.train_hours]["f1"].mean()),
                    "f1_last": window_mean(bins, st.day_hours - st.last_hours, st.day_hours), "installs": inst})
    v, _ = run_controlled(models.static, data.replay_table, control_for(cfg, "Static-Map", models.static))
    bins = binned_f1(hours * 3600, y, v.label[data.test_in_replay].astype(np.int64), flow, st.bin_minutes * 60,
                     len(data.classes), 0, cfg.seed, t_end_s=st.day_s)
    out.append({"slow_loop": "none (Static-Map)", "f1_mean": float(bins[bins["t_mid_h"] >= st.train_hours]["f1"].mean()),
                "f1_last": window_mean(bins, st.day_hours - st.last_hours, st.day_hours), "installs": 0})
    return pd.DataFrame(out)


def resolve(cfg: StabilityExperiment, clock: Clock) -> StabilityExperiment:
    return cfg.with_compression(clock)
