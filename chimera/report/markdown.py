"""report.md: what a reader of the run needs, in one page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

SMALL_TEST_FLOWS = 3
SMALL_REAL_PACKETS = 100_000


def data_notes(ds: Any, test_flows_per_class: dict[str, int]) -> list[str]:
    """What the reader must know about the data, from the data itself (never from the adapter's name)."""
    notes = []
    thin = {c: n for c, n in test_flows_per_class.items() if n < SMALL_TEST_FLOWS}
    if thin:
        notes.append("Small data: " + ", ".join(f"{c} ({n} test flow{'s' * (n != 1)})" for c, n in thin.items())
                     + f" have fewer than {SMALL_TEST_FLOWS} test flows; their per-class F1 rests on a handful of "
                     "flows and moves macro-F1 a lot.")
    if ds.manifest.get("source") != "synthetic" and len(ds.table) < SMALL_REAL_PACKETS:
        notes.append(f"Real traffic, but only {len(ds.table):,} packets: far too small to reproduce the paper's "
                     "figures; treat these numbers as a functional check on real traffic.")
    if ds.manifest.get("source") == "synthetic":
        notes.append("Synthetic traffic from chimera.data.synthetic (shaped like the real dataset, not the real "
                     "data); numbers are ours, measured on this build, never the paper's.")
    if ds.manifest.get("unreadable_captures"):
        notes.append(f"{len(ds.manifest['unreadable_captures'])} captures could not be read and were skipped "
                     "(see the dataset's manifest for each reason and fix).")
    return notes


INT_COLUMNS = ("bits_per_flow", "table_entries", "support", "hard_vetoes", "evictions", "unparsed", "lost",
               "reference_mismatches", "register_mismatches", "packets", "replayed", "verdicts", "not_sent",
               "dropped_by_capture")


def _table(df: pd.DataFrame) -> str:
    """Markdown table: integers as integers, floats to 4 places, missing values as an em dash."""
    d = df.copy()
    for c in d.columns:
        if c in INT_COLUMNS:
            d[c] = d[c].map(lambda x: "—" if pd.isna(x) else f"{int(x)}")
        elif pd.api.types.is_float_dtype(d[c]):
            d[c] = d[c].map(lambda x: "—" if pd.isna(x) else f"{x:.4f}")
    return d.to_markdown(index=False, disable_numparse=True)


def _describe(target: Any) -> str:
    return ", ".join(f"{k}: {v}" for k, v in target.describe().items() if k != "target")


def write_report(path: Path, cfg: Any, ds: Any, ablation: pd.DataFrame, per_class: pd.DataFrame,
                 target: Any, manifest: dict[str, Any], test_flows_per_class: dict[str, int] | None = None) -> None:
    m = manifest
    override = m.get("dataset_override")
    title = f"# {cfg.name} on {ds.manifest['name']}" if override else f"# {cfg.name}: {cfg.description or 'Chimera experiment'}"
    lines = [title, ""]
    if override:
        lines += [f"- experiment: {cfg.description or cfg.name} — run here on `{override}` (--dataset), not on the "
                  "experiment's own data", ""]
    ran = m.get("target", target.name)
    lines += [f"- run: `{m['run_id']}` on target **{ran}** ({_describe(target)})"]
    if m.get("target_fallback"):
        lines += [f"- asked for target **{m.get('target_requested')}**; ran on **{ran}**: {m['target_fallback']}"]
    for v, why in (m.get("variant_fallbacks") or {}).items():
        lines += [f"- variant **{v}** ran on the reference target, not {target.name}: {why}"]
    lines += [f"- git: `{(m.get('git') or {}).get('commit')}`" + (" (dirty tree)" if (m.get("git") or {}).get("dirty") else ""),
              f"- dataset: {ds.manifest['name']} ({ds.manifest['source']}), {len(ds.table)} packets, "
              f"{ds.flows.n_flows} flows, classes: {', '.join(ds.classes)}",
              f"- splits (flows 75/10/15, seed {cfg.seed}): {m['dataset']['split_packets']}", ""]
    lines += [f"> {n}" for n in data_notes(ds, test_flows_per_class or {})] + [""]
    cols = ["group", "variant", "software_only", "macro_f1", "macro_precision", "macro_recall", "bits_per_flow",
            "table_entries", "table_kbits", "float_int_agreement", "executed_on"]
    t = ablation[[c for c in cols if c in ablation]].copy()
    t["variant"] = t["variant"] + t["software_only"].map({True: " †", False: ""})
    t = t.drop(columns=["software_only"])
    lines += ["## Results (test split, packet level)", "", _table(t), "",
              "† control-plane only: cannot run in a switch; evaluated by the float software classifier.",
              "bits_per_flow: all per-flow register state the build needs; table_entries/kbits: all tables.", ""]
    if m.get("figures"):
        lines += ["## Figures", ""] + [f"![{Path(f).stem}]({f})" for f in m["figures"] if f.endswith(".png")] + [""]
    main = ablation.iloc[0]["variant"]
    lines += [f"## Per class: {main}", "", _table(per_class[per_class["variant"] == main].drop(columns=["variant"])), ""]
    acc = (m.get("dataset") or {}).get("accounting")
    if acc:
        lines += ["## Packet accounting", "", "Every packet of the dataset is in exactly one row:", "",
                  _table(pd.DataFrame({"category": list(acc), "packets": list(acc.values())})), ""]
    replay_cols = [c for c in ("replayed", "verdicts", "not_sent", "dropped_by_capture", "lost") if c in ablation]
    if replay_cols:
        lines += ["Every replayed frame ends as exactly one of: a verdict, not sent (reason below), dropped by the "
                  "capture (the kernel's count at h2), or lost (no tool reports it):", "",
                  _table(ablation[["variant", *replay_cols]]), ""]
        reasons = sorted({r for r in ablation.get("not_sent_reason", pd.Series(dtype=str)).fillna("") if r})
        lines += [f"Not sent: {r}." for r in reasons] + ([""] if reasons else [])
    extra = [c for c in ("hard_vetoes", "evictions", "unparsed", "reference_mismatches", "register_mismatches",
                         "latency_switch_p50_us", "latency_switch_p99_us", "latency_host_p50_us",
                         "latency_host_p99_us", "install_ms") if c in ablation]
    if extra:
        lines += ["## Dataplane counters", "", _table(ablation[["variant", *extra]]), ""]
    if "reference_mismatches" in ablation:
        lines += ["reference_mismatches: packets whose verdict differs from the reference pipeline run on the same "
                  "frames with the switch's own timestamps (conformance; 0 is the only acceptable value). Latency: "
                  "in-switch from the verdict header's timestamps, host-to-host from the h1/h2 captures. "
                  "evictions: '—' where the switch's counters could not be read (unknown, not 0).", ""]
    data_flag = f" --dataset {override}" if override else ""
    lines += ["## Reproduce", "", f"    invoke run-experiment --name {cfg.name} --target {target.name}{data_flag}", ""]
    if m.get("variant_fallbacks"):
        lines += ["(variants named above run on the reference target whichever target is asked for)", ""]
    lines += [f"Timings (s): {', '.join(f'{k} {v:.1f}' for k, v in m.get('timings_s', {}).items())}", ""]
    path.write_text("\n".join(lines))
