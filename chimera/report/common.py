"""Pieces every report shares: the header (what ran, where, on what), data notes, tables, reproduce line."""

from __future__ import annotations

from typing import Any

import pandas as pd

from chimera.report.run import RunView

SMALL_TEST_FLOWS = 3
SMALL_REAL_PACKETS = 100_000

INT_COLUMNS = ("bits_per_flow", "table_entries", "support", "hard_vetoes", "evictions", "unparsed", "lost",
               "reference_mismatches", "register_mismatches", "packets", "replayed", "verdicts", "not_sent",
               "dropped_by_capture", "installs", "failed_installs", "churn_total", "entries_written", "steps",
               "per_flow_bits", "exact_bits", "ternary_range_bits", "action_data_bits", "input_bits", "key_size",
               "value_size", "max_entries", "type", "m", "d_v", "bits", "window", "formula_bits", "budget_bits",
               "entries", "entry_bits", "bitwidth", "size", "test_packets", "attack_packets", "benign_train_packets",
               "leaves")


def _float(x: float) -> str:
    """4 decimals; tiny nonzero values (budget ratios) in scientific notation rather than as 0.0000."""
    if pd.isna(x):
        return "—"
    return f"{x:.2e}" if x != 0 and abs(x) < 5e-4 else f"{x:.4f}"


def table(df: pd.DataFrame) -> str:
    """Markdown table: integers as integers, floats to 4 places, missing values as an em dash."""
    d = df.copy()
    for c in d.columns:
        if c in INT_COLUMNS:
            d[c] = d[c].map(lambda x: "—" if pd.isna(x) else f"{int(x)}")
        elif pd.api.types.is_float_dtype(d[c]):
            d[c] = d[c].map(_float)
    return d.to_markdown(index=False, disable_numparse=True)


def data_notes(ds: dict[str, Any]) -> list[str]:
    """What the reader must know about the data, from the data itself (never from the adapter's name)."""
    notes = []
    thin = {c: n for c, n in (ds.get("test_flows_per_class") or {}).items() if n < SMALL_TEST_FLOWS}
    if thin:
        notes.append("Small data: " + ", ".join(f"{c} ({n} test flow{'s' * (n != 1)})" for c, n in thin.items())
                     + f" have fewer than {SMALL_TEST_FLOWS} test flows; their per-class F1 rests on a handful of "
                     "flows and moves macro-F1 a lot.")
    packets = int(ds.get("packets") or 0)
    if ds.get("source") != "synthetic" and packets < SMALL_REAL_PACKETS:
        notes.append(f"Real traffic, but only {packets:,} packets: far too small to reproduce the paper's "
                     "figures; treat these numbers as a functional check on real traffic.")
    if ds.get("source") == "synthetic":
        notes.append("Synthetic traffic from chimera.data.synthetic (shaped like the real dataset, not the real "
                     "data); numbers are ours, measured on this build, never the paper's.")
    if ds.get("unreadable_captures"):
        notes.append(f"{len(ds['unreadable_captures'])} captures could not be read and were skipped "
                     "(see the dataset's manifest for each reason and fix).")
    return notes


def _describe(detail: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in (detail or {}).items() if k != "target")


def header(run: RunView, default_title: str) -> list[str]:
    """Title, run id and target, git state, dataset and splits, fallbacks, data notes."""
    m, cfg = run.manifest, run.config
    ds = m.get("dataset") or {}
    override = m.get("dataset_override")
    name = cfg.get("name", m.get("experiment"))
    title = f"# {name} on {ds.get('name')}" if override else f"# {name}: {cfg.get('description') or default_title}"
    lines = [title, ""]
    if override:
        lines += [f"- experiment: {cfg.get('description') or name} — run here on `{override}` (--dataset), not on "
                  "the experiment's own data", ""]
    ran = m.get("target")
    lines += [f"- run: `{m.get('run_id')}` on target **{ran}** ({_describe(m.get('target_detail') or {})})"]
    if m.get("target_fallback"):
        lines += [f"- asked for target **{m.get('target_requested')}**; ran on **{ran}**: {m['target_fallback']}"]
    for v, why in (m.get("variant_fallbacks") or {}).items():
        lines += [f"- variant **{v}** ran on the reference target, not {m.get('target_requested') or ran}: {why}"]
    git = m.get("git") or {}
    lines += [f"- git: `{git.get('commit')}`" + (" (dirty tree)" if git.get("dirty") else "")]
    if ds:
        lines += [f"- dataset: {ds.get('name')} ({ds.get('source')}), {ds.get('packets')} packets, {ds.get('flows')} "
                  f"flows, classes: {', '.join(ds.get('classes') or [])}"]
        if ds.get("split_packets"):
            rule = ds.get("split_rule") or f"flows 75/10/15, seed {cfg.get('seed')}"
            lines += [f"- splits ({rule}): {ds['split_packets']}"]
    lines += [""]
    lines += [f"> {n}" for n in data_notes(ds)] + [""]
    return lines


def accounting(run: RunView) -> list[str]:
    acc = (run.manifest.get("dataset") or {}).get("accounting")
    if not acc:
        return []
    return ["## Packet accounting", "", "Every packet of the dataset is in exactly one row:", "",
            table(pd.DataFrame({"category": list(acc), "packets": list(acc.values())})), ""]


def replay_accounting(df: pd.DataFrame, key: str = "variant") -> list[str]:
    cols = [c for c in ("replayed", "verdicts", "not_sent", "dropped_by_capture", "lost") if c in df]
    if not cols:
        return []
    lines = ["Every replayed frame ends as exactly one of: a verdict, not sent (reason below), dropped by the "
             "capture (the kernel's count at h2), or lost (no tool reports it):", "", table(df[[key, *cols]]), ""]
    reasons = sorted({r for r in df.get("not_sent_reason", pd.Series(dtype=str)).fillna("") if r})
    return lines + [f"Not sent: {r}." for r in reasons] + ([""] if reasons else [])


def reproduce(run: RunView, extra: str = "") -> list[str]:
    m = run.manifest
    override = m.get("dataset_override")
    data_flag = f" --dataset {override}" if override else ""
    name = run.config.get("name", m.get("experiment"))
    target = m.get("target_requested") or m.get("target")
    lines = ["## Reproduce", "", f"    invoke run-experiment --name {name} --target {target}{data_flag}{extra}", ""]
    t = m.get("timings_s") or {}
    if t:
        lines += [f"Timings (s): {', '.join(f'{k} {v:.1f}' for k, v in t.items())}", ""]
    return lines


def figure_lines(run: RunView, figs: list[str]) -> list[str]:
    return [f"![{f.rsplit('/', 1)[-1].rsplit('.', 1)[0]}]({f})" for f in figs if f.endswith(".png")]
