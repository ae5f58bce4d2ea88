"""The variants kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.variants import tables as T
from chimera.report.common import accounting, figure_lines, header, replay_accounting, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_ablation(df: pd.DataFrame, out: Path) -> list[Path]:
    """Macro-F1 per variant, grouped; software-only (†) rows hatched."""
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(df) + 1.5))
    d = df.copy()
    d["row"] = d["variant"] + d["software_only"].map({True: " †", False: ""})
    sns.barplot(data=d, y="row", x="macro_f1", hue="group", dodge=False, ax=ax)
    for bar, sw in zip(ax.patches, d["software_only"]):
        if sw:
            bar.set_hatch("//")
    ax.set_xlabel("packet-level macro F1")
    ax.set_ylabel("")
    ax.set_xlim(0, 1)
    if d["group"].astype(bool).any():
        ax.legend(loc="lower right", fontsize=8)
    return save(fig, out, "ablation_f1")


def plot_confusion(df: pd.DataFrame, out: Path, title: str) -> list[Path]:
    order = list(dict.fromkeys(df["true"]))  # class order as in the dataset, not alphabetical
    m = df.pivot(index="true", columns="pred", values="count").reindex(index=order, columns=order)
    m = m.div(m.sum(axis=1).clip(lower=1), axis=0)
    fig, ax = plt.subplots(figsize=(1 + 0.7 * len(m), 0.8 + 0.6 * len(m)))
    sns.heatmap(m, annot=True, fmt=".2f", cmap="Blues", vmin=0, vmax=1, ax=ax, cbar=False)
    ax.set_title(title)
    return save(fig, out, "confusion")


def plot_per_class(df: pd.DataFrame, out: Path) -> list[Path]:
    sns.set_theme(style="whitegrid")
    fig, ax = plt.subplots(figsize=(8, 0.4 * df["class"].nunique() + 1.5))
    sns.barplot(data=df, y="class", x="f1", hue="variant", ax=ax)
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7, loc="lower right")
    return save(fig, out, "per_class_f1")


def render(run: RunView) -> list[str]:
    ablation = run.table(T.ABLATION)
    ablation["group"] = ablation["group"].astype(object).where(ablation["group"].notna(), "").astype(str)
    pcs = run.table(T.PER_CLASS)
    conf = run.table(T.CONFUSION)
    out = run.figures_dir
    main = str(ablation.iloc[0]["variant"])
    figs = plot_ablation(ablation, out) if len(ablation) > 1 else []
    figs += plot_confusion(conf[conf["variant"] == main].drop(columns=["variant"]), out,
                              f"{main} (test packets)")
    figs += plot_per_class(pcs, out)
    fig_rel = [run.rel(p) for p in figs]

    lines = header(run, "Chimera experiment")
    cols = ["group", "variant", "software_only", "macro_f1", "macro_precision", "macro_recall", "bits_per_flow",
            "table_entries", "table_kbits", "latency_switch_p50_us", "latency_switch_p99_us", "switch_pps",
            "float_int_agreement", "executed_on", "row_note"]
    t = ablation[[c for c in cols if c in ablation]].copy()
    t["variant"] = t["variant"] + t["software_only"].map({True: " †", False: ""})
    if "row_note" in t:
        t["row_note"] = t["row_note"].astype(object).fillna("").astype(str)
    t = t.drop(columns=["software_only"])
    lines += ["## Results (test split, packet level)", "", table(t, T.ABLATION), "",
              "† control-plane only: cannot run in a switch; evaluated by the float software classifier.",
              "bits_per_flow: all per-flow register state the build needs; table_entries/kbits: all tables; latency "
              "(in-switch p50/p99, µs) and switch_pps (the rate the switch classified at) as the paper's ablation table "
              "has them, on a testbed target ('—' on the reference, where nothing is timed). "
              "row_note: where a row did not run on the switch, and why a row scores exactly like an earlier one.",
              ""]
    trained = [c for c in ("variant", "configs_tried", "scorings", "chosen", "at_edge", "edge_binds", "val_f1",
                           "epochs_run", "stopped_by", "epoch_cap", "cap_reached_in") if c in ablation]
    if "epochs_run" in ablation:
        budget = "configs_tried" in ablation
        wide = run.manifest.config.get("tuning") == "wide"
        lines += ["## How each variant was trained", "", table(ablation[trained], T.ABLATION), "",
                  ("Every variant on its widened search (chimera/baselines/budget.py, WIDE: every configuration, "
                   "Chimera's included, the budget's rules otherwise): the check on rows whose budgeted choice binds "
                   "at an edge, not the comparison itself. at_edge and edge_binds as the budget defines them, on the "
                   "widened search. stopped_by cap: the guard cap bound."
                   if wide else
                   "Every variant under the comparison's budget (chimera/baselines/budget.py), as Table 1's methods: "
                   "each configuration of Chimera's grid trained to patience, the best validation macro-F1 kept "
                   "(scorings: the validation scores its choice read), beta as the fusion configures it. at_edge: "
                   "the kept value is the lowest or highest of its axis; edge_binds: validation still rises toward it. "
                   "stopped_by cap: the guard cap bound."
                   if budget else
                   "Trained as the model section says (no budget: beta chosen on validation); not a comparison "
                   "under Table 1's budget. stopped_by cap: the epoch cap bound."), ""]
    lines += ["## Figures", "", *figure_lines(run, fig_rel), ""]
    lines += [f"## Per class: {main}", "", table(pcs[pcs["variant"] == main].drop(columns=["variant"]), T.PER_CLASS), ""]
    lines += accounting(run)
    lines += replay_accounting(ablation)
    extra = [c for c in ("hard_vetoes", "evictions", "unparsed", "reference_mismatches", "register_mismatches",
                         "latency_switch_p50_us", "latency_switch_p99_us", "latency_host_p50_us",
                         "latency_host_p99_us", "install_ms") if c in ablation]
    if extra:
        lines += ["## Dataplane counters", "", table(ablation[["variant", *extra]], T.ABLATION), ""]
    if "reference_mismatches" in ablation:
        lines += ["reference_mismatches: packets whose verdict differs from the reference pipeline run on the same "
                  "frames with the switch's own timestamps (conformance; 0 is the only acceptable value). Latency: "
                  "in-switch from the verdict header's timestamps, host-to-host from the h1/h2 captures. "
                  "evictions: '—' where the switch's counters could not be read (unknown, not 0).", ""]
    lines += reproduce(run)
    if run.manifest.variant_fallbacks:
        lines += ["(variants named above run on the reference target whichever target is asked for)", ""]
    return lines
