"""The stability kind (stability24h): one drifting day through Chimera, Fast-Only and Static-Map.

The day is generated already compressed (``stability.compression``): flows
arrive, drift and follow the diurnal load on the compressed clock, each flow
keeping its own packet timing, so training and replay see the same inter-arrival
features. The model trains on flows that start in the first ``train_hours``;
every packet of the day is then replayed (the switch sees all traffic, as
deployed) and the test packets (held-out flows of the training hours, every
later flow) are scored per time bin:

- **Chimera**: the fast path (class-EMA prior, GAMMA > 0) and the slow loop
  (re-fitted Map tables installed live);
- **Fast-Only**: the fast path, no installs;
- **Static-Map**: neither (GAMMA = 0, no installs).

Conformance holds across every install: the reference replays the same frames
switching versions where the switch did (chimera.targets.testbed.conformance).
With ``diagnose``, slow-loop variants run on the reference too, so the report can
say what the loop's parts did.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import numpy as np
import pandas as pd

from chimera.compile.build import compile_model
from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.loop import SlowLoop
from chimera.controlplane.offline import run_controlled
from chimera.data.dataset import TIME_BASE_NS
from chimera.experiments.config import DatasetSpec, ExperimentConfig, StabilitySpec
from chimera.experiments.stages.compile import save_artifact, slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData, prepare, record_dataset, resolve_dataset
from chimera.experiments.stages.rules import LearnedRules, learn_rules
from chimera.experiments.stages.train import TrainedVariant, train_variant
from chimera.formats.artifact import Artifact
from chimera.metrics.timeseries import binned_f1, window_mean

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


def day_dataset(cfg: ExperimentConfig) -> DatasetSpec:
    """The experiment's synthetic dataset laid on the compressed day (times in the YAML are simulated hours)."""
    st = cfg.stability
    assert st is not None and cfg.dataset.synthetic is not None
    c = st.compression
    syn = cfg.dataset.synthetic.model_copy(update={
        "duration_s": st.trace_s,
        "attack_at_s": None if st.attack_at_hour is None else st.attack_at_hour * 3600 / c,
        "drift_step_at_s": None if st.drift_step_at_hour is None else st.drift_step_at_hour * 3600 / c})
    return cfg.dataset.model_copy(update={"synthetic": syn})


def prepare_day(ctx: RunContext) -> PreparedData:
    """The day's data: the time split, and every packet replayed."""
    cfg, st = ctx.cfg, ctx.cfg.stability
    assert st is not None
    ds = resolve_dataset(day_dataset(cfg), ctx.data_root)
    train_until = TIME_BASE_NS + int(st.train_hours * 3600 / st.compression * 1e9)
    data = prepare(ds, cfg.seed, train_until_ns=train_until)
    data = dataclasses.replace(data, replay_rows=np.arange(len(ds.table)))
    record_dataset(ctx.run.manifest, data, f"by time: flows starting in the first {st.train_hours:g} simulated hours "
                   f"split 75/10/15 (seed {cfg.seed}), every later flow is test; the whole day is replayed")
    return data


def day_hours(data: PreparedData, st: StabilitySpec, rows: np.ndarray) -> np.ndarray:
    """Simulated time of day (hours) of packets ``rows``."""
    return (data.ds.table.ts_ns[rows] - TIME_BASE_NS) / 1e9 * st.compression / 3600


@dataclasses.dataclass(frozen=True)
class DayModels:
    """The day's model compiled twice: with the fast-path prior (Chimera, Fast-Only) and without."""

    trained: TrainedVariant
    fast: Artifact
    static: Artifact

    def artifact(self, configuration: str) -> Artifact:
        return self.static if configuration == "Static-Map" else self.fast


def build_models(ctx: RunContext, data: PreparedData, rules: LearnedRules) -> DayModels:
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


def control_for(cfg: ExperimentConfig, configuration: str, art: Artifact, **over: Any) -> SlowLoop:
    st = cfg.stability
    assert st is not None
    cp = cfg.control.model_copy(update={"enabled": configuration == "Chimera" and cfg.control.enabled, **over})
    return SlowLoop(art, ControlPlaneConfig.model_validate(cp.model_dump()), compression=st.compression)


def summarize(configuration: str, bins: pd.DataFrame, loop: SlowLoop, st: StabilitySpec, t_cp_s: float,
              extra: dict[str, Any]) -> dict[str, Any]:
    """One row of stability.csv."""
    steps = pd.DataFrame(loop.log_rows())
    inst = steps[steps["decision"] == "install"] if len(steps) else steps
    after = bins[bins["t_mid_h"] >= st.train_hours]
    dt = inst["install_ms"].to_numpy() if len(inst) else np.zeros(0)
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
    }
    row["f1_drop"] = row["f1_first"] - row["f1_last"]
    row["budget_ratio"] = row["install_p50_ms"] / 1e3 / t_cp_s
    row["budget_ratio_replay"] = row["install_p50_ms"] / 1e3 / (t_cp_s / st.compression)
    for k in ("lost", "reference_mismatches", "register_mismatches", "replayed", "verdicts", "install_ms"):
        if k in extra:
            row[k if k != "install_ms" else "load_ms"] = extra[k]
    return row


def run(ctx: RunContext) -> None:
    cfg, st = ctx.cfg, ctx.cfg.stability
    assert st is not None
    with ctx.timed("dataset"):
        ctx.data = data = prepare_day(ctx)
        ctx.check_classes(len(data.classes))
    ctx.run.manifest["stability"] = {"compression": st.compression, "trace_s": st.trace_s, "day_hours": st.day_hours,
                                     "t_cp_s": cfg.control.t_cp_s, "t_cp_replay_s": cfg.control.t_cp_s / st.compression}
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
    rows, all_bins, logs = [], [], []
    for conf in st.configurations:
        art = models.artifact(conf)
        loop = control_for(cfg, conf, art)
        log.info("[stability] %s (%s) on %s: replaying %.0f s (a %g-hour day compressed %gx)", conf,
                 CONFIGURATIONS[conf], ctx.target.name, span_s, st.day_hours, st.compression)
        with ctx.timed(f"target:{conf}"):
            res = ctx.target.run(art, data.replay_table, ctx.run.path, slug(conf), control=loop)
        pred = res.verdicts.label[data.test_in_replay].astype(np.int64)
        bins = binned_f1(hours * 3600, y, pred, flow, bin_s, len(data.classes), st.bootstrap, cfg.seed,
                         t_end_s=st.day_s)
        bins.insert(0, "configuration", conf)
        bins["load_packets"] = load[: len(bins)]
        all_bins.append(bins)
        rows.append(summarize(conf, bins, loop, st, cfg.control.t_cp_s, res.extra))
        if loop.steps:
            logs.append(pd.DataFrame(loop.log_rows()).assign(configuration=conf))
        log.info("[stability] %s: mean F1 %.4f, first %.4f, last %.4f, %d installs; %s", conf, rows[-1]["f1_mean"],
                 rows[-1]["f1_first"], rows[-1]["f1_last"], rows[-1]["installs"],
                 {k: res.extra[k] for k in ("lost", "reference_mismatches") if k in res.extra})
    pd.DataFrame(rows).to_csv(ctx.run.path / "stability.csv", index=False)
    pd.concat(all_bins, ignore_index=True).to_csv(ctx.run.path / "stability_bins.csv", index=False)
    if logs:
        pd.concat(logs, ignore_index=True).to_csv(ctx.run.path / "control.csv", index=False)
    if st.diagnose:
        with ctx.timed("diagnose"):
            diagnose(ctx, data, models, y, hours, flow).to_csv(ctx.run.path / "diagnosis.csv", index=False)


def diagnose(ctx: RunContext, data: PreparedData, models: DayModels, y: np.ndarray, hours: np.ndarray,
             flow: np.ndarray) -> pd.DataFrame:
    """The slow loop's parts switched off one at a time, on the reference (fast: no replay)."""
    cfg, st = ctx.cfg, ctx.cfg.stability
    assert st is not None
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
