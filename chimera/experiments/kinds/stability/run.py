"""The stability kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd

from chimera.compile.build import compile_model
from chimera.controlplane.config import ControlPlaneConfig
from chimera.controlplane.loop import SlowLoop
from chimera.controlplane.offline import ModelSwaps, run_controlled
from chimera.controlplane.prior import TokenPosterior, keys_of_tokens
from chimera.controlplane.pseudo import PseudoLabelConfig, PseudoLoop
from chimera.data.dataset import TIME_BASE_NS
from chimera.experiments.config import DatasetSpec
from chimera.experiments.kinds.stability import tables as T
from chimera.experiments.kinds.stability.config import (ADAPTATIONS, StabilityExperiment, StabilitySection,
                                                       StabilitySpec)
from chimera.experiments.stages.compile import save_artifact, slug
from chimera.experiments.stages.context import RunContext
from chimera.experiments.stages.dataset import PreparedData, prepare, record_dataset, resolve_dataset
from chimera.experiments.stages.rules import LearnedRules, learn_rules
from chimera.experiments.stages.train import ModelCache, TrainedVariant, train_variant
from chimera.formats.artifact import Artifact
from chimera.data.pcap import PacketTable
from chimera.data.tokens import Tokens, dataplane_eligible, tokenize
from chimera.formats.rows import Cells, num
from chimera.metrics.drift import drift_bins
from chimera.metrics.days import K, f1_by_unit, paired_by_unit
from chimera.metrics.timeseries import binned_f1, window_mean
from chimera.model.tokenizer import MAP_KEYS
from chimera.testbed.replay import Clock
from chimera.targets.registry import TRUTH

log = logging.getLogger(__name__)




#: slow-loop variants run on the reference when stability.diagnose (what each part of the loop does)
# dict[str, Any]: library boundary: pydantic's model_copy(update=...) of the control-plane settings
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


def prepare_day(ctx: RunContext[SE], cfg: SE | None = None) -> PreparedData:
    """The day's data: the time split, and every packet replayed; ``cfg``: another realization of the day (its
    generator seed), recorded in the manifest's dataset only where it is the experiment's own."""
    own = cfg is None
    cfg = ctx.cfg if cfg is None else cfg
    st = cfg.stability
    ds = resolve_dataset(day_dataset(cfg), ctx.data_root)
    train_until = TIME_BASE_NS + int(st.train_hours * 3600 / st.factor * 1e9)
    data = prepare(ds, cfg.seed, train_until_ns=train_until)
    data = dataclasses.replace(data, replay_rows=np.arange(len(ds.table)))
    if not own:
        return data
    record_dataset(ctx.run.manifest, data, f"by time: flows starting in the first {st.train_hours:g} simulated hours "
                   f"split 75/10/15 (seed {cfg.seed}), every later flow is test; the whole day is replayed")
    return data


def hours_of(ts_ns: np.ndarray, st: StabilitySpec) -> np.ndarray:
    """Simulated time of day (hours) of trace timestamps."""
    return (ts_ns - TIME_BASE_NS) / 1e9 * st.factor / 3600


def day_hours(data: PreparedData, st: StabilitySpec, rows: np.ndarray) -> np.ndarray:
    """Simulated time of day (hours) of packets ``rows``."""
    return hours_of(data.ds.table.ts_ns[rows], st)


@dataclasses.dataclass(frozen=True)
class DayModels:
    """The day's model of one training seed, compiled twice: with the fast-path prior and without."""

    seed: int
    trained: TrainedVariant
    fast: Artifact
    static: Artifact

    def artifact(self, configuration: str) -> Artifact:
        return self.fast if ADAPTATIONS[configuration].fast_prior else self.static


def build_models(ctx: RunContext[SE], data: PreparedData, rules: LearnedRules, seed: int | None = None,
                 day: str = "") -> DayModels:
    """Train (with ``seed``, default the experiment's; a cache of its own per seed and day realization) and compile
    the day's model; ``day``: the realization's tag in the artifacts' names ("" for the experiment's own day)."""
    v = ctx.variants[0]
    seed = ctx.cfg.seed if seed is None else seed
    cache = ctx.cache if seed == ctx.cfg.seed and not day else ModelCache()
    with ctx.timed("train"):
        trained = train_variant(data, rules, v, seed, cache)
    with ctx.timed("compile"):
        prov = {"dataset_sha256": data.ds.manifest.get("packets_sha256"), "variant": v.name, "training_seed": seed}
        fast = compile_model(trained.model, rules.rules, rules.weights, v.compile, trained.fusion, trained.beta,
                             provenance={**prov, "configuration": "with the fast-path prior"})
        static = compile_model(trained.model, rules.rules, rules.weights, v.compile,
                               trained.fusion.model_copy(update={"gamma": 0.0}), trained.beta,
                               provenance={**prov, "configuration": "without the fast-path prior"})
    if fast.c("GAMMA") == 0:
        log.warning("fusion.gamma is 0: the fast-path configurations run without the fast-path prior")
    tag = day + ("" if seed == ctx.cfg.seed else f"-seed{seed}")
    save_artifact(fast, ctx.run.path / "artifacts", f"day-fast-path{tag}")
    save_artifact(static, ctx.run.path / "artifacts", f"day-static{tag}")
    return DayModels(seed, trained, fast, static)


def token_posterior(data: PreparedData, art: Artifact) -> TokenPosterior:
    """The prior-shift correction's p_train(y | key), from the training tokens (chimera.controlplane.prior)."""
    rows = data.train_rows
    return TokenPosterior.fit(keys_of_tokens(data.tokens, rows, art.len_lo), data.y(rows), len(data.classes),
                              art.len_lo)


def true_shares(data: PreparedData, cfg: StabilityExperiment) -> Callable[[float, float], np.ndarray]:
    """The class shares of the replayed packets between two times of day (simulated seconds, on the slow loop's
    clock: from the first replayed packet): what the prior-shift EM estimates from the switch's token sample,
    known here because the day is generated. A window with no labelled packet gives equal shares."""
    table, n = data.replay_table, len(data.classes)
    t = (table.ts_ns - table.ts_ns.min()) / 1e9 * cfg.stability.factor if len(table) else np.zeros(0)
    y = data.y(data.replay_rows)
    keep = y >= 0
    order = np.argsort(t[keep], kind="stable")
    t, y = t[keep][order], y[keep][order]

    def shares(t_from_s: float, t_to_s: float) -> np.ndarray:
        lo, hi = np.searchsorted(t, [t_from_s, t_to_s])
        c = np.bincount(y[lo:hi], minlength=n).astype(np.float64)
        return c / c.sum() if c.sum() else np.full(n, 1.0 / n)
    return shares


def drop_captures(replay_dir: Path, name: str) -> int:
    """Delete one finished replay's captures (every attempt's sent and received pcaps); returns the bytes freed.
    A replayed day's two captures take about 0.6 GB, so a run of 10 seeds x 3 days x 4 configurations would fill
    this machine's disk; the verdicts they carried are in the run's tables, checked against the reference."""
    freed = 0
    for p in sorted(replay_dir.glob(f"{name}*.pcap")) if replay_dir.is_dir() else []:
        if re.fullmatch(r"(-\d+)?\.(sent|recv)\.pcap", p.name[len(name):]):
            freed += p.stat().st_size
            p.unlink()
    return freed


def control_for(cfg: StabilityExperiment, configuration: str, art: Artifact, prior: TokenPosterior | None = None,
                truth: Callable[[float, float], np.ndarray] | None = None, **over: Any) -> SlowLoop:
    """The slow loop of ``configuration`` (disabled where it runs none); ``truth``: the day's true class shares
    (true_shares), which a prior arm installs (``prior: truth``) or is scored against (``prior: em``)."""
    slow = ADAPTATIONS[configuration].slow
    cp = cfg.control.model_copy(update={"enabled": slow is not None and cfg.control.enabled, **(slow or {}),
                                        **over})
    cpc = ControlPlaneConfig.model_validate(cp.model_dump())
    uses_prior = cpc.enabled and cpc.prior != "off"
    pseudo = ADAPTATIONS[configuration].pseudo
    make: Callable[..., SlowLoop] = SlowLoop
    if pseudo is not None and cpc.enabled:
        make = functools.partial(PseudoLoop, pseudo=PseudoLabelConfig.model_validate(pseudo))
    return make(art, cpc, compression=cfg.stability.factor, prior_model=prior if uses_prior else None,
                true_prior=truth if uses_prior else None)


def f1_summary(bins: pd.DataFrame, st: StabilitySpec) -> dict[str, float]:
    """The F1 columns of a row: after the training hours (mean, worst bin), the training hours, the last hours."""
    after = bins[bins["t_mid_h"] >= st.train_hours]
    return {"f1_mean": float(after["f1"].mean()), "f1_worst_bin": float(after["f1"].min()),
            "f1_first": window_mean(bins, 0, st.train_hours),
            "f1_last": window_mean(bins, st.day_hours - st.last_hours, st.day_hours)}


def summarize(configuration: str, bins: pd.DataFrame, loop: SlowLoop, st: StabilitySpec, t_cp_s: float,
              columns: Cells) -> Cells:
    """One row of stability.csv."""
    steps = pd.DataFrame(loop.log_rows())
    inst = steps[steps["decision"] == "install"] if len(steps) else steps
    dt = inst["install_ms"].to_numpy() if len(inst) else np.zeros(0)
    measured = inst["install_ms_measured"].dropna().to_numpy() if len(inst) else np.zeros(0)
    f1 = f1_summary(bins, st)
    p50 = float(np.percentile(dt, 50)) if dt.size else float("nan")
    row: Cells = {
        "configuration": configuration, **f1,
        "installs": int(len(inst)),
        "failed_installs": int((steps["decision"] == "failed").sum()) if len(steps) else 0,
        "churn_total": int(inst["churn"].sum()) if len(inst) else 0,
        "churn_per_install": float(inst["churn"].mean()) if len(inst) else float("nan"),
        "install_p50_ms": p50,
        "install_p99_ms": float(np.percentile(dt, 99)) if dt.size else float("nan"),
        "install_simulated": bool(len(inst) and inst["install_simulated"].all()),
        "install_measured_p50_ms": float(np.percentile(measured, 50)) if measured.size else float("nan"),
    }
    err = steps["prior_error"].dropna() if len(steps) else pd.Series(dtype=float)
    if len(err):   # a prior arm scored against the day's true class shares, over every tick it estimated
        row["prior_error_mean"], row["prior_error_max"] = float(err.mean()), float(err.max())
        row["prior_held_ticks"] = int((steps["prior_held"] > 0).sum())
    row["f1_drop"] = f1["f1_first"] - f1["f1_last"]
    row["budget_ratio"] = p50 / 1e3 / t_cp_s
    row["budget_ratio_replay"] = p50 / 1e3 / (t_cp_s / st.factor)
    out = {**row, **{k: v for k, v in columns.items() if k != "install_ms"}}
    if "install_ms" in columns:
        out["load_ms"] = columns["install_ms"]
    return out


#: paired differences the report states (a - b, what it measures), where both ran
COMPARISONS: list[tuple[str, str, str]] = [
    ("Chimera", "Fast-Only", "the slow loop's own effect"),
    ("Chimera", "Static-Map", "both timescales"),
    ("Fast-Only", "Static-Map", "the fast path alone"),
    ("Re-cluster-Only", "Static-Map", "Map re-fitting alone"),
    ("Prior-Only", "Static-Map", "the prior-shift correction alone"),
    ("Paper-Loop", "Static-Map", "the paper's two timescales (its EMA slow loop with the fast path)"),
    ("Paper-Loop", "Chimera", "the paper's slow loop against our k-means re-fit, each with the fast path"),
    ("Chimera+Prior", "Chimera", "adding the prior-shift correction to Chimera"),
    ("Chimera+Prior", "Static-Map", "all three adaptations"),
    ("Prior-Truth", "Prior-Only", "the EM's estimation error (true shares installed against the estimate)"),
    ("Prior-Truth", "Static-Map", "the correction's form, with no estimation error"),
    ("Prior-Uniform", "Prior-Only", "the correction's zero: equal shares against the training mix"),
    ("Prior-Gated", "Prior-Only", "holding the bias of classes too rare in the sample"),
    ("Pseudo-Label", "Static-Map", "re-learning the global layer from confident verdicts alone"),
    ("Chimera+Pseudo", "Chimera", "adding the pseudo-label loop to Chimera"),
    ("Oracle", "Static-Map", "the oracle's ceiling"),
    ("Oracle", "Chimera", "what Chimera leaves to the oracle"),
]
#: replay counters summed over the seeds in the per-configuration row (every one must be 0 on a testbed)
SUMMED = ("replayed", "verdicts", "not_sent", "dropped_by_capture", "lost", "reference_mismatches",
          "register_mismatches", "evictions", "installs", "failed_installs", "churn_total", "prior_held_ticks")


def pooled(rows: list[Cells], bins: Mapping[K, pd.DataFrame], st: StabilitySpec, seed: int) -> Cells:
    """One configuration's row over its training seeds (and day realizations): F1s averaged (with the interval of
    the mean F1: seed-and-block on one day, over the days' means on several), counters summed, the rest of the
    first seed's row."""
    df = pd.DataFrame(rows)
    out = dict(rows[0])
    for c in df.columns:
        if c in SUMMED and pd.api.types.is_numeric_dtype(df[c]):
            out[c] = df[c].sum(min_count=1)
        elif c.startswith(("f1_", "prior_error_")) and pd.api.types.is_numeric_dtype(df[c]):
            out[c] = float(df[c].mean())
    out.pop("seed", None)
    out.pop("day", None)
    out["seeds"] = len(rows)
    if "day" in df:
        out["days"] = int(df["day"].nunique())
    out["f1_mean"], out["f1_mean_lo"], out["f1_mean_hi"] = f1_by_unit(bins, st.train_hours, block_bins(st), seed=seed)
    return out


def block_bins(st: StabilitySpec) -> int | None:
    """The configured block length in bins (None: chosen from each series)."""
    return None if st.block_hours is None else max(1, int(round(st.block_hours * 60 / st.bin_minutes)))


def differences(bins: Mapping[str, Mapping[tuple[int, int], pd.DataFrame]], st: StabilitySpec, seed: int) -> pd.DataFrame:
    """``COMPARISONS`` that both ran: the mean F1 difference after the training hours, paired per training seed
    (and day realization) and time bin, with a 95% interval: over seeds and blocks of bins on one day, over the
    days' means on several (chimera.metrics.days)."""
    rows = []
    for a, b, what in COMPARISONS:
        if a in bins and b in bins:
            m, lo, hi, n, days, blk = paired_by_unit(bins[a], bins[b], st.train_hours, block_bins(st), seed=seed)
            rows.append({"a": a, "b": b, "measures": what, "diff": m, "lo": lo, "hi": hi, "seeds": n, "days": days,
                         "interval_over": "days" if days > 1 else "seeds and blocks",
                         "block_hours": blk * st.bin_minutes / 60, "block_chosen": st.block_hours is None,
                         "verdict": "a > b" if lo > 0 else "a < b" if hi < 0 else "no difference shown"})
    return pd.DataFrame(rows, columns=list(T.DIFFERENCES.columns))


def block_sensitivity(bins: Mapping[str, Mapping[tuple[int, int], pd.DataFrame]], st: StabilitySpec, diffs: pd.DataFrame,
                      seed: int) -> pd.DataFrame:
    """Each difference's interval at other block lengths: one bin (no autocorrelation kept), half, the one used,
    and twice it, so a reader sees how much the verdict leans on the block length."""
    rows = []
    for d in diffs.itertuples():
        used = max(1, int(round(float(d.block_hours) * 60 / st.bin_minutes)))
        for blk in sorted({1, max(1, used // 2), used, 2 * used}):
            m, lo, hi, n, _, _ = paired_by_unit(bins[str(d.a)], bins[str(d.b)], st.train_hours, blk, seed=seed)
            rows.append({"a": d.a, "b": d.b, "block_bins": blk, "block_hours": blk * st.bin_minutes / 60,
                         "used": blk == used, "diff": m, "lo": lo, "hi": hi,
                         "verdict": "a > b" if lo > 0 else "a < b" if hi < 0 else "no difference shown"})
    return pd.DataFrame(rows)


def _on_chimera_row(rows: list[Cells], diffs: pd.DataFrame) -> None:
    """The two differences the book cites, on the Chimera row (as before; now seed-and-block intervals)."""
    row = next((r for r in rows if r["configuration"] == "Chimera"), None)
    if row is None or diffs.empty:
        return
    for other, col in (("Fast-Only", "diff_vs_fast_only"), ("Static-Map", "diff_vs_static_map")):
        d = diffs[(diffs["a"] == "Chimera") & (diffs["b"] == other)]
        if len(d):
            row.update({col: float(d["diff"].iloc[0]), f"{col}_lo": float(d["lo"].iloc[0]),
                        f"{col}_hi": float(d["hi"].iloc[0])})


def oracle_swaps(ctx: RunContext[StabilityExperiment], data: PreparedData, models: DayModels) -> ModelSwaps:
    """The oracle of one training seed: every ``oracle_every_hours`` after the training hours, retrain on the
    training split plus the labelled flows that started in the last ``oracle_window_hours`` and ended before that
    instant (oracle_rows: no flow is both learned from and scored), split by flow; swap the whole model in."""
    cfg, st = ctx.cfg, ctx.cfg.stability
    v = ctx.variants[0]
    t = data.ds.table.ts_ns
    to_ns = 3600e9 / st.factor
    starts = t[data.ds.flows.first_packet]
    fid = data.ds.flows.flow_id
    labelled = np.zeros(len(t), bool)
    labelled[np.concatenate([data.train_rows, data.val_rows, data.test_rows])] = True
    split = data.ds.flow_split(cfg.seed)
    at = [int(TIME_BASE_NS + h * to_ns) for h in np.arange(st.train_hours + st.oracle_every_hours, st.day_hours,
                                                            st.oracle_every_hours)]

    ends = np.full(data.ds.flows.n_flows, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(ends, fid[fid >= 0], t[fid >= 0])       # each flow's last packet's time

    def model(i: int, t_ns: int) -> Artifact:
        recent_tr, recent_va = oracle_rows(t, fid, starts, ends, labelled, split,
                                           t_ns - st.oracle_window_hours * to_ns, t_ns)
        recent = recent_tr | recent_va
        tr = np.union1d(data.train_rows, np.flatnonzero(recent_tr))
        va = np.union1d(data.val_rows, np.flatnonzero(recent_va))
        d = dataclasses.replace(data, train_rows=tr, val_rows=va, test_rows=va)
        with ctx.timed("oracle"):
            r = learn_rules(ctx.rule_file, d, cfg.seed, cfg.rule_precision_floor)
            tv = train_variant(d, r, v, models.seed, ModelCache())
            art = compile_model(tv.model, r.rules, r.weights, v.compile, tv.fusion.model_copy(update={"gamma": 0.0}),
                                tv.beta, provenance={"configuration": "Oracle", "training_seed": models.seed,
                                                     "retrained_at_h": (t_ns - TIME_BASE_NS) / to_ns})
        log.info("[stability] oracle (seed %d): retrained at %.1f h on %d packets (%d of them recent)", models.seed,
                 (t_ns - TIME_BASE_NS) / to_ns, tr.size, int(recent.sum()))
        return art

    return ModelSwaps(at, model)


def oracle_rows(t: np.ndarray, fid: np.ndarray, starts: np.ndarray, ends: np.ndarray, labelled: np.ndarray,
                split: np.ndarray, lo: float, t_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """The recent labelled packets an oracle retrained at ``t_ns`` learns from (training, validation masks): the
    packets of the flows that started in [``lo``, ``t_ns``) and ended before ``t_ns``, by the flow split (1:
    validation). A flow still running at ``t_ns`` is left out whole: its later packets are evaluated after the swap,
    and no flow may be both learned from and scored (issue 56: such a flow once gave its early packets to
    training)."""
    ok = labelled & (fid >= 0)
    ok[ok] = (starts[fid[ok]] >= lo) & (ends[fid[ok]] < t_ns)
    fs = np.full(len(t), -1)
    fs[ok] = split[fid[ok]]
    return ok & (fs != 1), ok & (fs == 1)


def drift_of(table: PacketTable, tokens: Tokens, labels: np.ndarray, len_lo: np.ndarray, n_classes: int,
             st: StabilitySpec) -> pd.DataFrame:
    """A day's drift decomposition per time bin (chimera.metrics.drift), over every labelled packet."""
    rows = np.flatnonzero(dataplane_eligible(table) & (labels >= 0))
    return drift_bins(hours_of(table.ts_ns[rows], st), keys_of_tokens(tokens, rows, len_lo),
                      labels[rows].astype(np.int64), st.train_hours, st.bin_minutes / 60, st.day_hours, MAP_KEYS,
                      n_classes)


def knob_table(ctx: RunContext[StabilityExperiment], art: Artifact) -> pd.DataFrame:
    """The drift each generator knob causes alone (the others off), beside none and the day as configured: mean
    divergence over the last hours, and over the training hours' own bins (the sampling floor)."""
    cfg, st = ctx.cfg, ctx.cfg.stability
    syn = cfg.the_dataset().synthetic
    assert syn is not None
    off = {"drift": 0.0, "diurnal": 0.0, "class_weights_end": {}, "covariate_tilt": 0.0}
    # dict[str, Any]: library boundary: pydantic's model_copy(update=...) of the dataset, validated by the models
    knobs: dict[str, tuple[str, dict[str, Any]]] = {
        "none": ("drift 0, diurnal 0, no class-mix schedule", off),
        "drift (sizes, timings)": (f"drift {syn.drift:g}", {**off, "drift": syn.drift}),
        "diurnal (load)": (f"diurnal {syn.diurnal:g}", {**off, "diurnal": syn.diurnal}),
        "class_weights_end (class mix)": (", ".join(f"{k} x{v:g}" for k, v in syn.class_weights_end.items()) or "none",
                                          {**off, "class_weights_end": syn.class_weights_end}),
        "covariate_tilt (selection on lengths)": (f"tilt {syn.covariate_tilt:g}",
                                                  {**off, "covariate_tilt": syn.covariate_tilt}),
        "as configured": ("every knob as the experiment sets it", {})}
    out = []
    for name, (setting, over) in knobs.items():
        day = cfg.model_copy(update={"dataset": cfg.the_dataset().model_copy(update={"synthetic": syn.model_copy(
            update=over)})})
        ds = resolve_dataset(day_dataset(day), ctx.data_root)
        b = drift_of(ds.table, tokenize(ds.table, ds.flows), ds.labels, art.len_lo, len(ds.classes), st)
        last = b[b["t_mid_h"] >= st.day_hours - st.last_hours]
        floor = b[b["in_training_hours"]]
        out.append({"knob": name, "setting": setting,
                    **{f"{k}_last": float(last[k].mean()) for k in ("covariate", "label", "concept")},
                    **{f"{k}_floor": float(floor[k].mean()) for k in ("covariate", "label", "concept")}})
    return pd.DataFrame(out)


def day_realization(cfg: StabilityExperiment, day: int) -> StabilityExperiment:
    """The experiment on another realization of its day: the generator's seed ``day``, every other knob as is."""
    ds = cfg.the_dataset()
    assert ds.synthetic is not None
    return cfg.model_copy(update={"dataset": ds.model_copy(update={"synthetic": ds.synthetic.model_copy(
        update={"seed": day})})})


def each_day(ctx: RunContext[SE], data: PreparedData) -> Iterator[tuple[int, SE, PreparedData, LearnedRules]]:
    """Every realization of the day the experiment names (its ``day_seeds``), in order, as (its generator seed, its
    config, its data, its rules): ``data`` is the first day's, prepared already; each later day is prepared here;
    the first day's rules are the run's (``ctx.rules``)."""
    cfg = ctx.cfg
    days = cfg.day_seeds
    for day in days:
        day_cfg = cfg if day == days[0] else cast(SE, day_realization(cfg, day))
        if day != days[0]:
            with ctx.timed("dataset"):
                data = prepare_day(ctx, day_cfg)
                ctx.check_classes(len(data.classes))
        with ctx.timed("rules"):
            rules = learn_rules(ctx.rule_file, data, cfg.seed, cfg.rule_precision_floor)
        if day == days[0]:
            ctx.rules = rules
        yield day, day_cfg, data, rules


@dataclasses.dataclass
class SeedDay:
    """What one training seed on one day realization adds to the run: its rows, its per-bin F1 tables (by
    configuration) and its control logs (the unit a stopped run's checkpoint holds)."""
    rows: list[Cells] = dataclasses.field(default_factory=list)
    bins: dict[str, pd.DataFrame] = dataclasses.field(default_factory=dict)
    logs: list[pd.DataFrame] = dataclasses.field(default_factory=list)


def run(ctx: RunContext[StabilityExperiment]) -> None:
    cfg = ctx.cfg
    st = cfg.stability
    days = cfg.day_seeds
    with ctx.timed("dataset"):
        ctx.data = data = prepare_day(ctx)
        ctx.check_classes(len(data.classes))
    ctx.record(StabilitySection(compression=st.factor, trace_s=st.trace_s, day_hours=st.day_hours,
                                t_cp_s=cfg.control.t_cp_s, t_cp_trace_s=cfg.control.t_cp_s / st.factor,
                                clock=ctx.replay.resolved_clock, install_ms_simulated=cfg.control.reference_install_ms,
                                seeds=cfg.training_seeds, days=days))
    seeds = cfg.training_seeds
    per_seed: dict[str, list[Cells]] = {}
    all_bins: dict[str, dict[tuple[int, int], pd.DataFrame]] = {}   # (day, training seed)
    logs: list[pd.DataFrame] = []
    first: DayModels | None = None
    first_data = data
    many = len(days) > 1
    for day, day_cfg, data, rules in each_day(ctx, data):
        test = data.test_rows
        y, hours = data.y(test), day_hours(data, st, test)
        flow = data.ds.flows.flow_id[test]
        load = np.histogram(day_hours(data, st, data.replay_rows),
                            bins=np.arange(0, st.day_hours + 1e-9, st.bin_minutes / 60))[0]
        bin_s = st.bin_minutes * 60
        ts = data.replay_table.ts_ns
        span_s = float(ts.max() - ts.min()) / 1e9 if len(ts) else 0.0  # what is replayed, not what was asked for

        def scored(conf: str, sd: int, labels: np.ndarray) -> pd.DataFrame:
            pred = labels[data.test_in_replay].astype(np.int64)
            bins = binned_f1(hours * 3600, y, pred, flow, bin_s, len(data.classes), st.bootstrap, sd,
                             t_end_s=st.day_s)
            bins.insert(0, "configuration", conf)
            bins.insert(1, "seed", sd)
            if many:
                bins.insert(2, "day", day)
            bins["load_packets"] = load[: len(bins)]
            return bins

        truth = true_shares(data, day_cfg)
        tag = f"day{day}" if many else ""

        def one_seed(sd: int) -> SeedDay:
            """Every configuration of the day with the training seed ``sd``: the unit a stopped run resumes at."""
            nonlocal first
            out = SeedDay()
            models = build_models(ctx, data, rules, sd, f"-{tag}" if tag else "")
            first = first or models
            prior = token_posterior(data, models.static)
            for conf in st.switch_configurations:
                art = models.artifact(conf)
                loop = control_for(day_cfg, conf, art, prior, truth)
                log.info("[stability] %s, %sseed %d (%s) on %s: a %g-hour day compressed %gx (%.0f s of trace), "
                         "clock %s", conf, f"day {day}, " if many else "", sd, ADAPTATIONS[conf].description,
                         ctx.target.name, st.day_hours, st.factor, span_s, ctx.replay.resolved_clock)
                name = slug("-".join(x for x in (conf, tag, f"seed{sd}" if len(seeds) > 1 or many else "") if x))
                with ctx.timed(f"target:{conf}"):
                    res = ctx.target.run(art, data.replay_table, ctx.run.path, name, replay=ctx.replay, control=loop)
                if st.keep_captures == "none" or (st.keep_captures == "first" and (sd, day) != (seeds[0], days[0])):
                    drop_captures(ctx.run.path / "replay", name)
                bins = out.bins[conf] = scored(conf, sd, res.verdicts.label)
                row: Cells = {**summarize(conf, bins, loop, st, loop.cfg.t_cp_s, res.columns()), "seed": sd,
                              **({"day": day} if many else {})}
                out.rows.append(row)
                if loop.steps:
                    out.logs.append(pd.DataFrame(loop.log_rows()).assign(configuration=conf, seed=sd,
                                                                         **({"day": day} if many else {})))
                log.info("[stability] %s, seed %d: mean F1 %.4f, first %.4f, last %.4f, %d installs; lost %s, %s "
                         "differ", conf, sd, row["f1_mean"], row["f1_first"], row["f1_last"], row["installs"],
                         row.get("lost"), row.get("reference_mismatches"))
            for conf in st.oracle_configurations if not st.oracle_seeds or sd in seeds[: st.oracle_seeds] else ():
                swaps = oracle_swaps(ctx, data, models)
                with ctx.timed(f"target:{conf}"):
                    v, _ = run_controlled(models.static, data.replay_table, swaps)
                bins = out.bins[conf] = scored(conf, sd, v.label)
                out.rows.append({"configuration": conf, "seed": sd, **({"day": day} if many else {}),
                                 **f1_summary(bins, st), "installs": len(swaps.swapped), "target": TRUTH})
            return out

        for sd in seeds:
            done = ctx.unit(f"day{day}-seed{sd}", SeedDay, functools.partial(one_seed, sd))
            if first is None:   # taken from a checkpoint: the drift and diagnosis read the first seed's models
                first = build_models(ctx, data, rules, sd, f"-{tag}" if tag else "")
            for r in done.rows:
                per_seed.setdefault(str(r["configuration"]), []).append(r)
            for conf, b in done.bins.items():
                all_bins.setdefault(conf, {})[(day, sd)] = b
            logs.extend(done.logs)
    assert first is not None
    data = first_data
    seed_rows = [r for conf in per_seed for r in per_seed[conf]]
    rows = [pooled(per_seed[c], all_bins[c], st, cfg.seed) for c in st.configurations if c in per_seed]
    for r in rows:
        r["f1_drop"] = num(r["f1_first"]) - num(r["f1_last"])
    diffs = differences(all_bins, st, cfg.seed)
    _on_chimera_row(rows, diffs)
    oracle = [r for r in rows if r["configuration"] in st.oracle_configurations]
    T.STABILITY.write(pd.DataFrame([r for r in rows if r["configuration"] not in st.oracle_configurations]),
                      ctx.run.path)
    T.STABILITY_SEEDS.write(pd.DataFrame(seed_rows), ctx.run.path)
    T.STABILITY_BINS.write(pd.concat([b for c in all_bins.values() for b in c.values()], ignore_index=True),
                           ctx.run.path)
    T.DIFFERENCES.write(diffs, ctx.run.path)
    if len(diffs):
        T.SENSITIVITY.write(block_sensitivity(all_bins, st, diffs, cfg.seed), ctx.run.path)
    if oracle:
        T.ORACLE.write(pd.DataFrame(oracle), ctx.run.path)
    if logs:
        T.CONTROL.write(pd.concat(logs, ignore_index=True), ctx.run.path)
    # the day's drift, the knobs and the diagnosis: on the first realization (the experiment's own day)
    test = data.test_rows
    y, hours, flow = data.y(test), day_hours(data, st, test), data.ds.flows.flow_id[test]
    with ctx.timed("drift"):
        T.DRIFT.write(drift_of(data.ds.table, data.tokens, data.ds.labels, first.static.len_lo, len(data.classes),
                               st), ctx.run.path)
        if st.drift_knobs:
            T.DRIFT_KNOBS.write(knob_table(ctx, first.static), ctx.run.path)
    if st.diagnose:
        with ctx.timed("diagnose"):
            T.DIAGNOSIS.write(diagnose(ctx, data, first, y, hours, flow), ctx.run.path)


def diagnose(ctx: RunContext[StabilityExperiment], data: PreparedData, models: DayModels, y: np.ndarray, hours: np.ndarray,
             flow: np.ndarray) -> pd.DataFrame:
    """The slow loop's parts switched off one at a time, on the reference (fast: no replay), first seed."""
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
