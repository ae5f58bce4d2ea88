"""The stability kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.stability import tables as T
from chimera.experiments.kinds.stability.config import StabilitySection
from chimera.metrics.timeseries import seed_mean
from chimera.report.common import accounting, figure_lines, header, label_simulated, replay_accounting, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_stability(bins: pd.DataFrame, out: Path, train_hours: float, attack_at_hour: float | None,
                   title: str = "", drift: pd.DataFrame | None = None) -> list[Path]:
    """F1 per time bin of each configuration on the simulated day (mean over training seeds), 95% bands, offered
    load shaded behind; below it, where given, the drift decomposition per bin (chimera.metrics.drift)."""
    sns.set_theme(style="whitegrid")
    bins = seed_mean(bins)
    if drift is not None and len(drift):
        fig, (ax, axd) = plt.subplots(2, 1, figsize=(10, 7), sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    else:
        fig, ax = plt.subplots(figsize=(10, 4.5))
        axd = None
    load = bins.drop_duplicates("bin")
    ax2 = ax.twinx()
    ax2.fill_between(load["t_mid_h"], 0, load["load_packets"], step="mid", color="0.85", zorder=0)
    ax2.set_ylabel("offered load (packets per bin)", color="0.5")
    ax2.set_ylim(0, max(1, float(load["load_packets"].max())) * 3)
    ax2.grid(False)
    ax.set_zorder(ax2.get_zorder() + 1)
    ax.patch.set_visible(False)
    confs = list(bins["configuration"].unique())   # one colour each, however many configurations the day runs
    palette = dict(zip(confs, sns.color_palette("deep" if len(confs) <= 10 else "husl", len(confs))))
    for conf, d in bins.groupby("configuration", sort=False):
        ls = "--" if conf == "Oracle" else "-"
        ax.plot(d["t_mid_h"], d["f1"], marker="o", ms=3, ls=ls, label=conf, color=palette[conf])
        ax.fill_between(d["t_mid_h"], d["f1_lo"], d["f1_hi"], alpha=0.15, color=palette[conf], linewidth=0)
    ax.axvspan(0, train_hours, facecolor="none", hatch="//", edgecolor="0.6", linewidth=0, label="training hours")
    if attack_at_hour is not None:
        ax.axvline(attack_at_hour, color="0.3", ls=":", lw=1)
        ax.text(attack_at_hour, 0.02, " attack", fontsize=8, color="0.3", transform=ax.get_xaxis_transform())
    ax.set_ylabel("packet-level macro F1 (test flows)")
    ax.set_xlim(0, float(bins["t_mid_h"].max()) + 0.5)
    ax.set_ylim(max(0.0, float(bins["f1_lo"].min()) - 0.05) if bins["f1_lo"].notna().any() else 0, 1.0)
    ax.legend(loc="lower left", fontsize=7, ncol=2)
    if axd is not None and drift is not None:
        for col, name in (("covariate", "covariate shift p(x)"), ("label", "label shift p(y)"),
                          ("concept", "concept shift p(x|y)")):
            axd.plot(drift["t_mid_h"], drift[col], marker=".", label=name)
        axd.axvspan(0, train_hours, facecolor="none", hatch="//", edgecolor="0.6", linewidth=0)
        axd.set_ylabel("JS divergence from\nthe training hours (bits)")
        axd.set_xlabel("simulated time of day (h)")
        axd.legend(loc="upper left", fontsize=7)
    else:
        ax.set_xlabel("simulated time of day (h)")
    if title:
        ax.set_title(title, fontsize=10)
    return save(fig, out, "stability_f1")


SUMMARY_COLUMNS = ["configuration", "f1_mean", "f1_worst_bin", "f1_first", "f1_last", "f1_drop", "installs",
                   "failed_installs", "churn_total", "churn_per_install", "install_p50_ms", "install_p99_ms",
                   "install_measured_p50_ms",
                   "budget_ratio", "budget_ratio_replay"]


def _differences(s: pd.DataFrame, d: pd.DataFrame | None = None) -> list[str]:
    """The paired differences ``d`` (differences.csv): seed-and-block intervals; older runs (no such table): the
    two on the Chimera row, bins resampled alone."""
    if d is not None:
        if d.empty:
            return []
        seeds = int(d["seeds"].max())
        chosen = "block_chosen" in d
        out = [f"## Differences, paired by training seed and time bin ({seeds} seed{'s' * (seeds > 1)})", "",
               "| difference | what it measures | mean over the bins after training | 95% interval | block (h) | "
               "verdict |", "| --- | --- | --- | --- | --- | --- |"]
        for _, r in d.iterrows():
            out.append(f"| {r['a']} − {r['b']} | {r['measures']} | {r['diff']:+.4f} | [{r['lo']:+.4f}, "
                       f"{r['hi']:+.4f}] | {r['block_hours']:g} | {r['verdict']} |")
        how = ("the seeds' spread (a t-interval over their means) and the day's (a moving-block bootstrap of the "
               "seeds' mean per bin, blocks never wrapping), in quadrature; the block length is chosen from each "
               "series by Politis and White's rule (block_sensitivity.csv: the same at other lengths)"
               if chosen else f"the seeds and, within the day, circular blocks of "
               f"{'/'.join(f'{x:g}' for x in sorted(set(d['block_hours'])))} h of bins")
        days = int(d["days"].max()) if "days" in d and d["days"].notna().any() else 1
        if days > 1:
            how = (f"the spread between the {days} day realizations: a t-interval over the days' means (each day's "
                   "seeds share its traffic and its bins' ups and downs, so the day is the independent unit; "
                   "chimera.metrics.days). The block length is reported, not used")
        return out + ["", "Each difference is the mean over training seeds and time bins after the training hours "
                      "of the two configurations' F1 in the same bin with the same model. Its interval holds "
                      f"{how}. Neighbouring bins are correlated, so resampling single bins would understate the "
                      "spread. An interval that contains 0 shows no effect.", ""]
    c = s[s["configuration"] == "Chimera"]
    if c.empty or "diff_vs_fast_only" not in s:
        return []
    r = c.iloc[0]
    out = ["## Differences, paired by time bin", "",
           "| difference | what it measures | mean over the bins after training | 95% interval |", "| --- | --- | --- | --- |"]
    for col, name, what in (("diff_vs_fast_only", "Chimera − Fast-Only", "the slow loop's own effect"),
                            ("diff_vs_static_map", "Chimera − Static-Map", "both timescales together")):
        if pd.notna(r.get(col)):
            out.append(f"| {name} | {what} | {r[col]:+.4f} | [{r[col + '_lo']:+.4f}, {r[col + '_hi']:+.4f}] |")
    return out + ["", "An interval that contains 0 is no measured effect: the bootstrap resamples the time bins, "
                  "each configuration's F1 in a bin paired with the others' in the same bin (one training seed; "
                  "runs before the seed-and-block intervals).", ""]


def _drift(run: RunView) -> list[str]:
    """The drift decomposition: what moved, per kind, against the sampling floor."""
    if not run.has(T.DRIFT):
        return []
    d = run.table(T.DRIFT)
    st = run.config.get("stability") or {}
    last_h = float(st.get("day_hours", 24)) - float(st.get("last_hours", 6))
    floor = d[d["in_training_hours"].astype(bool)]
    last = d[d["t_mid_h"] >= last_h]
    out = ["## What drifts: covariate, label and concept shift", "",
           "Jensen-Shannon divergence (bits) of each time bin from the training hours, over every labelled packet, "
           "with x a packet's Map key under the training length bins: covariate shift moves p(x), label shift "
           "p(y), concept shift p(x | y). The training hours' own bins give the floor that sampling alone "
           "reaches (figure below, lower panel).", "",
           "| shift | training hours (floor) | last hours | ratio |", "| --- | --- | --- | --- |"]
    for k in ("covariate", "label", "concept"):
        f, l_ = float(floor[k].mean()), float(last[k].mean())
        out.append(f"| {k} | {f:.4f} | {l_:.4f} | {l_ / f if f > 0 else math.nan:.1f}× |")
    out.append("")
    if run.has(T.DRIFT_KNOBS):
        kn = run.table(T.DRIFT_KNOBS)
        out += ["Each generator knob alone (the others off), on a day generated with the same seed; the mean "
                "divergence over the last hours, and over the training hours (floor):", "",
                table(kn, T.DRIFT_KNOBS), ""]
    return out


def _verdict(run: RunView) -> list[str]:
    """What this day says, computed from its tables: which shifts it carries, which adaptations beat Static-Map
    (intervals over seeds and blocks), and how much of the oracle's gain the best unsupervised one reaches."""
    if not (run.has(T.DIFFERENCES) and run.has(T.DRIFT)):
        return []
    d, drift = run.table(T.DIFFERENCES), run.table(T.DRIFT)
    st = run.config.get("stability") or {}
    last = drift[drift["t_mid_h"] >= float(st.get("day_hours", 24)) - float(st.get("last_hours", 6))]
    floor = drift[drift["in_training_hours"].astype(bool)]
    ratio = {k: float(last[k].mean()) / float(floor[k].mean()) if float(floor[k].mean()) > 0 else math.nan
             for k in ("covariate", "label", "concept")}
    vs = d[d["b"] == "Static-Map"]
    groups = {v: [f"{r['a']} ({r['diff']:+.4f} [{r['lo']:+.4f}, {r['hi']:+.4f}])" for _, r in vs.iterrows()
                  if r["verdict"] == v] for v in ("a > b", "a < b", "no difference shown")}
    lines = ["## Verdict on this day", "",
             "Drift in the last hours, as a multiple of the training hours' own floor: " +
             ", ".join(f"{k} {x:.1f}×" for k, x in ratio.items()) + ".", "",
             "Against Static-Map (paired by seed and time bin; intervals over seeds and blocks of bins):",
             f"- measurably above: {'; '.join(groups['a > b']) or 'none'};",
             f"- measurably below: {'; '.join(groups['a < b']) or 'none'};",
             f"- no difference shown: {'; '.join(groups['no difference shown']) or 'none'}.", ""]
    unsup = vs[vs["a"] != "Oracle"]
    orc = vs[vs["a"] == "Oracle"]
    if len(orc) and len(unsup):
        best = unsup.loc[unsup["diff"].idxmax()]
        gain = float(orc["diff"].iloc[0])
        share = float(best["diff"]) / gain if gain > 0 else math.nan
        lines += [f"The oracle, retrained with labels, gains {gain:+.4f} [{float(orc['lo'].iloc[0]):+.4f}, "
                  f"{float(orc['hi'].iloc[0]):+.4f}] over Static-Map: that much of the day's loss is learnable from "
                  f"labelled recent traffic. The best configuration a switch runs unsupervised, {best['a']}, reaches "
                  f"{best['diff']:+.4f} ({share:+.0%} of the oracle's gain).", ""]
    return lines


def _oracle(run: RunView) -> list[str]:
    if not run.has(T.ORACLE):
        return []
    o = run.table(T.ORACLE)
    st = run.config.get("stability") or {}
    return ["## The oracle (a ceiling, not a switch configuration)", "",
            f"Retrained every {st.get('oracle_every_hours', 3)} h after the training hours on the training split "
            f"plus the labelled flows of the last {st.get('oracle_window_hours', 6)} h, on the reference, each new "
            "model starting on a fresh switch state. It uses ground truth no switch has: it bounds what any "
            "unsupervised loop could reach on this day.", "", table(o, T.ORACLE), ""]


def _recovery(s: pd.DataFrame) -> list[str]:
    """What each configuration recovers of Static-Map's loss, whatever the answer."""
    idx = s.set_index("configuration")
    if "Static-Map" not in idx.index:
        return []
    static = idx.loc["Static-Map"]
    loss = static["f1_first"] - static["f1_last"]
    lines = [f"Static-Map: F1 {static['f1_first']:.4f} in the training hours, {static['f1_last']:.4f} in the last "
             f"hours: the drift costs it {loss:.4f}."]
    for conf in idx.index:
        if conf == "Static-Map":
            continue
        gain = idx.loc[conf, "f1_last"] - static["f1_last"]
        share = gain / loss if loss > 0 else math.nan
        lines.append(f"{conf}: last-hours F1 {idx.loc[conf, 'f1_last']:.4f}, {gain:+.4f} against Static-Map "
                     f"({share:+.0%} of the loss recovered); mean F1 after training {idx.loc[conf, 'f1_mean']:.4f} "
                     f"vs {static['f1_mean']:.4f}.")
    return lines


def _why(run: RunView, s: pd.DataFrame) -> list[str]:
    """If the two-timescale configuration does not beat Static-Map, the diagnosis runs say what the loop did."""
    idx = s.set_index("configuration")
    if not {"Chimera", "Static-Map"} <= set(idx.index) or not run.has(T.DIAGNOSIS):
        return []
    d = run.table(T.DIAGNOSIS)
    beat = idx.loc["Chimera", "f1_mean"] > idx.loc["Static-Map", "f1_mean"]
    lines = ["## Why: the slow loop's parts, one at a time (reference target)", "",
             table(d, T.DIAGNOSIS), ""]
    base = d.set_index("slow_loop")
    if not beat:
        lines.append("The two-timescale configuration does **not** beat Static-Map on this day. What the runs above "
                     "measure:")
    notes = []
    if "no re-binning" in base.index and "as configured" in base.index:
        dlt = base.loc["as configured", "f1_mean"] - base.loc["no re-binning", "f1_mean"]
        notes.append(f"re-binning the coarse length bins changes mean F1 by {dlt:+.4f}")
    if "re-bin fine bins too" in base.index:
        dlt = base.loc["re-bin fine bins too", "f1_mean"] - base.loc["as configured", "f1_mean"]
        notes.append(f"also re-binning the fine bins (the value sub-token) changes it by {dlt:+.4f}")
    if "no re-clustering" in base.index:
        dlt = base.loc["as configured", "f1_mean"] - base.loc["no re-clustering", "f1_mean"]
        notes.append(f"re-clustering the Map keys changes it by {dlt:+.4f}")
    lines += [f"- {n}." for n in notes] + [""]
    lines += ["What a live update can change is the Map tables only (docs/pipeline.md, 'State and versions'): "
              "the value, kernel and class-head tables, which hold what the model learned, stay as trained. "
              "Re-fitting bins and clusters re-indexes the inputs; it cannot re-learn what a drifted length or "
              "timing means, and quantiles of unlabelled traffic move with the class mix as well as with the "
              "drift. The inter-arrival buckets are fixed shifts, not a table, so timing drift is out of its reach. "
              "See docs/controlplane.md.", ""]
    return lines


def render(run: RunView) -> list[str]:
    s = run.table(T.STABILITY)
    bins = run.table(T.STABILITY_BINS)
    st = run.config.get("stability") or {}
    sm = run.manifest.get("stability", StabilitySection) or StabilitySection()
    squeeze = "uncompressed" if float(sm.compression or 1) == 1 else f"compressed {float(sm.compression):g}×"
    title = (f"{st.get('day_hours', 24)}-hour day, {squeeze}; T_cp {sm.t_cp_s} s simulated = "
             f"{float(sm.t_cp_trace_s or 0):.3g} s of trace")
    figs = plot_stability(bins, run.figures_dir, float(st.get("train_hours", 0)), st.get("attack_at_hour"),
                          title=title, drift=run.table(T.DRIFT) if run.has(T.DRIFT) else None)
    lines = header(run, "24-hour stability")
    lines += [f"A {st.get('day_hours')}-hour day, {squeeze} (a trace of "
              f"{sm.trace_s:.0f} s); the model trains on flows that start in the first "
              f"{st.get('train_hours')} h; T_cp = {sm.t_cp_s} s of simulated time "
              f"({float(sm.t_cp_trace_s or 0):.3g} s on the trace's clock, the clock the switch classifies on "
              f"under `clock: {sm.clock}`).", ""]
    shown, sim_note = label_simulated(s[[c for c in (*SUMMARY_COLUMNS, "install_simulated") if c in s]])
    lines += ["## Summary", "", table(shown.drop(columns="install_simulated", errors="ignore"), T.STABILITY), "",
              *sim_note, *([""] if sim_note else []),
              "f1_mean / f1_worst_bin: over the bins after the training hours; f1_first: the training hours (held-out "
              "flows); f1_last: the last hours. budget_ratio: Δt_install p50 / T_cp (deployed, uncompressed); "
              "budget_ratio_replay: the same against T_cp on this run's compressed clock.", ""]
    if sm.seeds and len(sm.seeds) > 1:
        lines += [f"Training seeds {', '.join(str(x) for x in sm.seeds)}: the model is trained once per seed on the "
                  "same split and every configuration runs each; the rows above average the seeds (stability_seeds.csv "
                  "has each), counters are summed.", ""]
    days = getattr(sm, "days", None) or []
    if len(days) > 1:
        lines += [f"Day realizations (generator seeds) {', '.join(str(x) for x in days)}: each day is generated, "
                  "trained on and run with every training seed; the rows above average them, and an interval is "
                  "over the days' means. The drift and knob tables are the first day's.", ""]
    lines += _recovery(s) + [""]
    lines += _oracle(run)
    lines += _differences(s, run.table(T.DIFFERENCES) if run.has(T.DIFFERENCES) else None)
    lines += _drift(run)
    lines += _verdict(run)
    lines += ["## F1 over the day", "", *figure_lines(run, [run.rel(p) for p in figs]), "",
              "Lines: macro-F1 per bin (test packets; the mean over training seeds), bands: 95% intervals from "
              "resampling the bin's flows; dashed: the oracle; grey: offered load (all packets); hatched: the "
              "training hours. Lower panel: the drift decomposition per bin.", ""]
    lines += _why(run, s)
    conf_cols = [c for c in ("configuration", "replayed", "verdicts", "lost", "reference_mismatches",
                             "register_mismatches", "load_ms") if c in s]
    if "reference_mismatches" in s:
        lines += ["## Conformance across installs", "",
                  "Every verdict of the switch equals the reference's, which replays the same frames switching "
                  "map versions exactly where the switch did (the version in each verdict header):", "",
                  table(s[conf_cols], T.STABILITY), ""]
        lines += replay_accounting(s, "configuration")
    if run.has(T.CONTROL):
        c = run.table(T.CONTROL)
        dec = c.groupby(["configuration", "decision"], sort=False).size().rename("steps").reset_index()
        lines += ["## Control-plane steps", "", table(dec, ["steps"]), "",
                  "Every step is a row of control.csv: Δmap, samples, occupancy shift, install time and churn.", ""]
    lines += accounting(run)
    lines += reproduce(run)
    return lines
