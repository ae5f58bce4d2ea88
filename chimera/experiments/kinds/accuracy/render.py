"""The accuracy kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.baselines.budget import SELECTION, WIDE_CONFIGS
from chimera.experiments.kinds.accuracy import tables as T
from chimera.experiments.kinds.yardstick_render import HONESTY, MARKS, _datasets, _mark
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_method_f1(df: pd.DataFrame, out: Path) -> list[Path]:
    """Macro-F1 per method and dataset (Table 1 as bars); software rows marked † in the label."""
    sns.set_theme(style="whitegrid")
    d = df[df["f1"].notna()].copy()
    d["method"] = d["method"] + d["kind"].map(lambda k: " †" if k == "software" else "")
    fig, ax = plt.subplots(figsize=(9, 0.35 * d["method"].nunique() * max(1, d["dataset"].nunique()) / 2 + 2))
    sns.barplot(data=d, y="method", x="f1", hue="dataset", ax=ax)
    ax.set(xlabel="packet-level macro-F1 (test split)", ylabel="", xlim=(0, 1))
    return save(fig, out, "accuracy_f1")


def _front(s: pd.DataFrame) -> list[tuple[float, float]]:
    """The Pareto front: each point with a better F1 than every point with no more state."""
    front, best = [], -1.0
    for _, r in s.sort_values(["per_flow_bits", "f1"], ascending=[True, False]).iterrows():
        if r["f1"] > best:
            best = r["f1"]
            front.append((max(float(r["per_flow_bits"]), 1.0), float(r["f1"])))
    return front


def plot_pareto(df: pd.DataFrame, out: Path) -> list[Path]:
    """F1 against per-flow state bits, one panel per dataset (classification rows only). Two fronts: over
    the methods that run as switch tables (solid) and over every method, software included (dashed)."""
    sns.set_theme(style="whitegrid")
    d = df[df["f1"].notna() & df["per_flow_bits"].notna() & (df["task"] == "classification")].copy()
    sets = list(d["dataset"].unique())
    fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4), squeeze=False)
    for ax, name in zip(axes[0], sets):
        s = d[d["dataset"] == name]
        sns.scatterplot(data=s, x="per_flow_bits", y="f1", hue="method", style="kind", s=80, ax=ax,
                        legend=ax is axes[0][0], palette="tab20", hue_order=list(dict.fromkeys(d["method"])))
        for rows, style, label in ((s[s["kind"] != "software"], "-", "front: switch tables"),
                                   (s, "--", "front: every method")):
            f = _front(rows)
            if f:
                xs, ys = zip(*f)
                ax.step(xs, ys, where="post", color="black", lw=1, ls=style, label=label)
        ax.set(xscale="log", xlabel="per-flow state (bits, allocated/stored)", ylabel="macro-F1", title=name)
    if axes[0][0].get_legend() is not None:
        sns.move_legend(axes[0][0], "upper left", bbox_to_anchor=(0, -0.2), ncol=3, fontsize=7)
    return save(fig, out, "pareto")


TUNING_COLUMNS = ("dataset", "method", "configs_tried", "scorings", "chosen", "at_edge", "edge_binds", "val_f1",
                  "epochs_run", "stopped_by", "cap_reached_in", "validation")


def tuning_lines(df: pd.DataFrame) -> list[str]:
    """The budget as this run spent it: per method the configurations tried, the one kept on validation, and
    (methods trained in epochs) the epochs it ran and why it stopped, so a binding cap shows. Runs from before
    the budget (no ``configs_tried`` column) say so."""
    if "configs_tried" not in df:
        return ["## Tuning", "", "This run predates the equal tuning budget (chimera.baselines.budget): its methods "
                "were not tuned alike.", ""]
    t = df[df["configs_tried"].notna()].copy()
    for c in ("chosen", "stopped_by", "validation", "at_edge"):
        if c in t:
            t[c] = t[c].fillna("—")
    cols = [c for c in TUNING_COLUMNS if c in t]
    tried = sorted({int(x) for x in t["configs_tried"]})
    capped = t[t["stopped_by"] == "cap"] if "stopped_by" in t else t.iloc[:0]
    lines = ["## Tuning", "", f"Every method below tried {' or '.join(map(str, tried))} configuration(s) of its search "
             "(chimera.baselines.budget: a grid, or for the gradient-trained methods a walk on the learning rate "
             "placed by the validation scores before each step; all "
             f"{WIDE_CONFIGS} of its widened search where the run is a widened check, `tuning: wide`), trained on the "
             f"training split, and kept one by {SELECTION}; the test split was read once, by the kept model. Class "
             "weights: balanced for every method.",
             "", table(t[cols], ("configs_tried", "scorings", "epochs_run", "cap_reached_in")), ""]
    if "at_edge" in t:
        edge = t[t["at_edge"].astype(str).str.len() > 1]
        binds = t[t["edge_binds"].astype(str) == "True"] if "edge_binds" in t else edge
        lines += [(f"**{len(edge)} of {len(t)} kept configurations sit at an edge of what their search tried** "
                   f"(`at_edge`); validation still rises toward the edge for {len(binds)} of them (`edge_binds`), "
                   "where the search may not have reached the method's best" + (": " + ", ".join(
                       f"{r.method} on {r.dataset}" for r in binds.itertuples()) if len(binds) else "") + "."
                   if len(edge) else "Every kept configuration is interior to what its search tried."), ""]
    if "stopped_by" in t and t["stopped_by"].notna().any():
        lines += [("**The epoch cap bound** for " + ", ".join(f"{r.method} on {r.dataset}" for r in capped.itertuples())
                   + ": their kept model stopped at the cap, not by patience.") if len(capped) else
                  f"No kept model stopped at the epoch cap ({int(t['epoch_cap'].max())}): every one stopped by "
                  "patience.", ""]
    return lines


def render(run: RunView) -> list[str]:
    df = run.table(T.ACCURACY)
    out = run.figures_dir
    figs = plot_method_f1(df, out) + plot_pareto(df, out)
    lines = header(run, "accuracy") + _datasets(run)
    d = df.copy()
    d["method"] = _mark(d)
    wide = d.pivot_table(index="method", columns="dataset", values=["precision", "recall", "f1"], sort=False)
    wide = wide.reorder_levels([1, 0], axis=1).sort_index(axis=1, level=0, sort_remaining=False)
    order = list(dict.fromkeys(d["dataset"]))
    cols = [(ds, m) for ds in order for m in ("precision", "recall", "f1") if (ds, m) in wide.columns]
    wide = wide[cols]
    wide.columns = [f"{ds} {dict(precision='PR', recall='RC', f1='F1')[m]}" for ds, m in cols]
    sizes = d.groupby("method", sort=False).agg(where=("where", "first"), input_bits=("input_bits", "first"),
                                                model_kbits=("model_kbits", "max"),
                                                per_flow_bits=("per_flow_bits", "max"))
    t1 = wide.join(sizes).reset_index()
    lines += ["## Table 1: precision / recall / macro-F1 (test packets)", "", table(t1, T.ACCURACY), "", *MARKS, "",
              "input_bits: header bits read per decision (window models: every packet of the window; Chimera: the "
              "current packet, its history lives in the per-flow state). model_kbits: measured from the built model "
              "(1 bit per binarized weight, 32 per float parameter; Chimera and Leo: their table bits). "
              "per_flow_bits: Chimera as the eBPF object allocates it; Leo the fields its tree tests; the others "
              "the fields of the window's earlier packets.", ""]
    cls = df[(df["task"] == "classification") & df["f1"].notna()]
    paper = cls[~cls["method"].str.contains("yardstick")]
    for ds in dict.fromkeys(cls["dataset"]):
        p = paper[paper["dataset"] == ds].sort_values("f1", ascending=False)
        ch = p[p["method"] == "Chimera"]["f1"]
        if p.empty or ch.empty:
            continue
        top, c = p.iloc[0], float(ch.iloc[0])
        rival = p[p["method"] != "Chimera"].iloc[0] if len(p) > 1 else None
        verdict = (f"Chimera is best of the paper's methods ({c:.4f}; next {rival['method']} {rival['f1']:.4f})"
                   if top["method"] == "Chimera" and rival is not None else
                   f"**{top['method']}** beats Chimera ({top['f1']:.4f} vs {c:.4f})")
        y = cls[(cls["dataset"] == ds) & cls["method"].str.startswith("Forest")]["f1"]
        yard = f"; the forest yardstick reaches {float(y.iloc[0]):.4f} (Chimera {c - float(y.iloc[0]):+.4f})" \
            if not y.empty else ""
        lines.append(f"- {ds}: {verdict}{yard}.")
    lines += ["", "The paper claims Chimera attains the best macro-F1 within switch budgets; where a row above "
              "beats it, on this data it does not, and we say so.", "", *[f"> {h}" for h in HONESTY], ""]
    lines += tuning_lines(df)
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), "",
              "Pareto: F1 against per-flow state bits, log scale, classification rows only. Solid step: the front "
              "of the methods that run as switch tables (Chimera, Leo); dashed: the front of every method, "
              "software and yardsticks included (the best F1 at or below each state size).", ""]
    lines += reproduce(run)
    return lines
