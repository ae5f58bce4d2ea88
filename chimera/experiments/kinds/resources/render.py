"""The resources kind's report: report.md and its figures, from the run directory alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from chimera.experiments.kinds.resources import tables as T
from chimera.experiments.kinds.resources.config import ResourcesSection
from chimera.report.common import figure_lines, header, reproduce, table
from chimera.report.figures import plt, save, sns
from chimera.report.run import RunView


def plot_resources_bits(df: pd.DataFrame, out: Path, budget: int) -> list[Path]:
    sns.set_theme(style="whitegrid")
    d = df.copy()
    d["row"] = d["method"] + " (" + d["where"] + ")"
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(d) + 1.5))
    sns.barplot(data=d, y="row", x="per_flow_bits", hue="method", dodge=False, ax=ax, legend=False)
    ax.axvline(budget, color="red", ls="--", label=f"budget {budget} bits")
    ax.set(xscale="log", xlabel="per-flow state (bits, allocated)", ylabel="")
    ax.legend()
    return save(fig, out, "resources_per_flow")


def compiles_section(df: pd.DataFrame) -> list[str]:
    """The compiler's verdict per switch-resident variant: the stages it spans and its share of each resource of one
    pipe, as the compiler's own report states capacity; a refusal in the compiler's words."""
    target = str(df["target"].iloc[0]) if len(df) else "the target"
    t = df.copy()
    shares = [c for c in t.columns if c.endswith("_share")]
    for c in shares:
        t[c] = t[c].map(lambda x: "" if pd.isna(x) else f"{100 * x:.1f}%")
    t["stages"] = [f"{int(u)} of {int(a)}" if ok else "" for ok, u, a in
                   zip(t["fits"], t.get("stages_used", t["fits"]), t.get("stages_available", t["fits"]))]
    t["reason"] = t["reason"].map(lambda r: "" if pd.isna(r) or not r else str(r).splitlines()[0][:160])
    leo = [c for c in ("depth", "val_f1", "sized_by") if c in t]
    if "depth" in t:
        t["depth"] = t["depth"].map(lambda x: "" if pd.isna(x) else str(int(x)))
        t["val_f1"] = t["val_f1"].map(lambda x: "" if pd.isna(x) else f"{x:.4f}")
        t["sized_by"] = t["sized_by"].map(lambda x: "" if pd.isna(x) else str(x))
    cycles = [c for c in t.columns if c.endswith("_latency_cycles")]
    for c in cycles:
        t[c] = t[c].map(lambda x: "" if pd.isna(x) else str(int(x)))
    cols = ["group", "variant", "fits", "stages", *shares, *(["tcam_entries"] if "tcam_entries" in t else []),
            *cycles, *leo, "reason"]
    compilers = ", ".join(sorted(set(df["compiler"].dropna().astype(str))))
    return [f"## The {target} compiler's verdict per variant (Table 3's resource columns)", "",
            table(t[cols], ["tcam_entries"]), "",
            f"Compiled by {compilers}. Each share is what the program uses over one pipe's capacity (the stages the "
            "pipe has x the units per stage), both read from the compiler's resource report, not from a datasheet. "
            "tcam_entries: the entries one version of the variant installs in the tables the compiler put in TCAM. "
            "The PHV shares are the containers and bits the program occupies of every container the pipe has (normal "
            "and tagalong); <gress>_latency_cycles is the compiler's estimate of the MAU's latency in clock cycles, "
            "a count of cycles and not a time. "
            "A refusal is the compiler's first error line; the run's build directory keeps its whole log. † variants "
            "have no switch program and no row."
            + (" Leo's rows: the tree the run chose on validation, and where the compiler refuses it, shallower trees "
               "of Leo's depths (Leo sizes its tree to the switch it runs on): the shallowest first, and only where it "
               "fits, the others from the deepest down to the first that fits; the rows are shown deepest first. "
               "val_f1 is each tree's validation macro-F1, what its depth costs." if leo else ""), ""]


def render(run: RunView) -> list[str]:
    df = run.table(T.RESOURCES)
    res = run.manifest.get("resources", ResourcesSection) or ResourcesSection()
    budget = int(res.budget_bits or df["budget_bits"].iloc[0])
    figs = plot_resources_bits(df, run.figures_dir, budget)
    lines = header(run, "resources")
    cols = ["method", "where", "per_flow_bits", "budget_ratio", "table_entries", "exact_bits", "ternary_range_bits",
            "action_data_bits", "model_kbits", "per_flow_source"]
    lines += ["## Table 2: resources as allocated", "", table(df[[c for c in cols if c in df]], T.RESOURCES), "",
              f"budget_ratio = per_flow_bits / {budget} bits (sweep.per_flow_budget_bits in the YAML). exact_bits: "
              "SRAM (exact-match tables); ternary_range_bits: TCAM-like (ternary and range tables, value + mask). "
              "Chimera's eBPF row is read from the compiled object's map declarations; its chimera.p4 row from "
              f"{res.p4_source}. chimera.p4 is compiled at fixed maxima "
              "(16-packet ring, 16 x 16 accumulators) so one program serves every configuration: its per-flow "
              "allocation does not shrink with the model.", ""]
    if "formula_bits" in df:
        f = df[df["method"] == "Chimera"]["formula_bits"].dropna()
        if not f.empty:
            lines += [f"For reference, the packed formula (ring + accumulators, no padding) gives {int(f.iloc[0])} "
                      "bits per flow for this model; the table reports what is allocated.", ""]
    for schema, title in ((T.EBPF_MAPS, "eBPF maps (libbpf)"), (T.P4_REGISTERS, "chimera.p4 registers"),
                          (T.CHIMERA_TABLES, "Chimera's tables (this model)")):
        if run.has(schema):
            lines += [f"## {title}", "", table(run.table(schema), schema), ""]
    if run.has(T.COMPILES):
        lines += compiles_section(run.table(T.COMPILES))
    lines += ["## Figures", "", *figure_lines(run, [run.rel(p) for p in figs]), ""]
    lines += reproduce(run)
    return lines
