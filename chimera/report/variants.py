"""The report of a variants run (quickstart, ablation): one row per variant, per class, confusion, counters."""

from __future__ import annotations

from chimera.formats import tables as T
from chimera.report import figures
from chimera.report.common import accounting, figure_lines, header, replay_accounting, reproduce, table
from chimera.report.run import RunView


def render(run: RunView) -> list[str]:
    ablation = run.table(T.ABLATION)
    ablation["group"] = ablation["group"].astype(object).where(ablation["group"].notna(), "").astype(str)
    pcs = run.table(T.PER_CLASS)
    conf = run.table(T.CONFUSION)
    out = run.figures_dir
    main = str(ablation.iloc[0]["variant"])
    figs = figures.ablation(ablation, out) if len(ablation) > 1 else []
    figs += figures.confusion(conf[conf["variant"] == main].drop(columns=["variant"]), out,
                              f"{main} (test packets)")
    figs += figures.per_class(pcs, out)
    fig_rel = [run.rel(p) for p in figs]

    lines = header(run, "Chimera experiment")
    cols = ["group", "variant", "software_only", "macro_f1", "macro_precision", "macro_recall", "bits_per_flow",
            "table_entries", "table_kbits", "latency_switch_p50_us", "latency_switch_p99_us", "switch_pps",
            "float_int_agreement", "executed_on", "row_note"]
    t = ablation[[c for c in cols if c in ablation]].copy()
    t["variant"] = t["variant"] + t["software_only"].map({True: " †", False: ""})
    if "row_note" in t:
        t["row_note"] = t["row_note"].fillna("").astype(str)
    t = t.drop(columns=["software_only"])
    lines += ["## Results (test split, packet level)", "", table(t, T.ABLATION), "",
              "† control-plane only: cannot run in a switch; evaluated by the float software classifier.",
              "bits_per_flow: all per-flow register state the build needs; table_entries/kbits: all tables; latency "
              "(in-switch p50/p99, µs) and switch_pps (the rate the switch classified at) as the paper's ablation table "
              "has them, on a testbed target ('—' on the reference, where nothing is timed). "
              "row_note: where a row did not run on the switch, and why a row scores exactly like an earlier one.",
              ""]
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
