"""Pieces every report shares: the header (what ran, where, on what), data notes, tables, reproduce line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from chimera.formats.rundir import DatasetRecord
from chimera.formats.tables import TableSchema
from chimera.report.run import RunView

SMALL_TEST_FLOWS = 3
SMALL_REAL_PACKETS = 100_000
CLOCK_NOTE = {"trace": "verdicts on the trace's own timestamps (the shim), identical at any replay pace",
              "switch": "verdicts on the switch's own clock (replay timing shapes the features)"}


def _float(x: float) -> str:
    """4 decimals; tiny nonzero values (budget ratios) in scientific notation rather than as 0.0000."""
    if pd.isna(x):
        return "—"
    return f"{x:.2e}" if x != 0 and abs(x) < 5e-4 else f"{x:.4f}"


def table(df: pd.DataFrame, ints: TableSchema | Iterable[str] = ()) -> str:
    """Markdown table: integers as integers (the schema's integer columns, or those named), floats to 4
    places, missing values as an em dash."""
    int_cols = ints.int_columns if isinstance(ints, TableSchema) else frozenset(ints)
    d = df.copy()
    for c in d.columns:
        if c in int_cols:
            d[c] = d[c].map(lambda x: "—" if pd.isna(x) else f"{int(x)}")
        elif pd.api.types.is_float_dtype(d[c]):
            d[c] = d[c].map(_float)
    return d.to_markdown(index=False, disable_numparse=True)


#: columns that carry a simulated install time where the target installs nothing (the reference)
SIMULATED_INSTALL = ("install_p50_ms", "install_p99_ms", "budget_ratio", "budget_ratio_replay")


def label_simulated(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Rows whose Δt_install is the configured constant (``install_simulated``), not a measurement: their
    install-time columns are renamed "... (simulated)" and a note says where the number comes from."""
    if "install_simulated" not in df or not df["install_simulated"].astype(bool).any():
        return df, []
    cols = {c: f"{c} (simulated)" for c in SIMULATED_INSTALL if c in df}
    note = ("(simulated): the Δt_install these columns use is the configured `control.reference_install_ms`, "
            "not a measurement, and budget ratios built on it are simulated too: the reference target installs "
            "nothing, and under the trace clock every install lands at a planned trace time so that the reference "
            "replays the version switch at the same packet. Where a switch installed for real, "
            "install_measured_p50_ms is the measured time (`invoke bench --what install` measures it under load).")
    return df.rename(columns=cols), [note]


def data_notes(ds: DatasetRecord) -> list[str]:
    """What the reader must know about the data, from the data itself (never from the adapter's name)."""
    notes = []
    thin = {c: n for c, n in ds.test_flows_per_class.items() if n < SMALL_TEST_FLOWS}
    if thin:
        notes.append("Small data: " + ", ".join(f"{c} ({n} test flow{'s' * (n != 1)})" for c, n in thin.items())
                     + f" have fewer than {SMALL_TEST_FLOWS} test flows; their per-class F1 rests on a handful of "
                     "flows and moves macro-F1 a lot.")
    if ds.source != "synthetic" and ds.packets < SMALL_REAL_PACKETS:
        notes.append(f"Real traffic, but only {ds.packets:,} packets: far too small to reproduce the paper's "
                     "figures; treat these numbers as a functional check on real traffic.")
    if ds.source == "synthetic":
        notes.append("Synthetic traffic from chimera.data.synthetic (shaped like the real dataset, not the real "
                     "data); numbers are ours, measured on this build, never the paper's.")
    if ds.unreadable_captures:
        notes.append(f"{len(ds.unreadable_captures)} captures could not be read and were skipped "
                     "(see the dataset's manifest for each reason and fix).")
    return notes


def _describe(detail: dict[str, Any]) -> str:  # JSON in: a manifest's target_detail
    return ", ".join(f"{k}: {v}" for k, v in (detail or {}).items() if k != "target")


def first_line(run: RunView) -> str:
    """What ran where, why there, and on which clock: the report's first line."""
    m = run.manifest
    why = m.target_reason or "asked for"
    if m.target_fallback:
        why += f"; ran on {m.target} instead of {m.target_requested}: {m.target_fallback}"
    clock = m.clock or "trace"
    return f"Target **{m.target}** ({why}) · clock **{clock}** ({CLOCK_NOTE.get(clock, clock)})"


def header(run: RunView, default_title: str) -> list[str]:
    """The first line (target, why, clock), title, run id, git state, dataset and splits, fallbacks, data notes."""
    m, cfg = run.manifest, run.config
    ds = m.dataset
    override = m.dataset_override
    name = cfg.get("name", m.experiment)
    title = f"# {name} on {ds.name if ds else ''}" if override else \
        f"# {name}: {cfg.get('description') or default_title}"
    lines = [first_line(run), "", title, ""]
    if override:
        lines += [f"- experiment: {cfg.get('description') or name} — run here on `{override}` (--dataset), not on "
                  "the experiment's own data", ""]
    lines += [f"- run: `{m.run_id}` on target **{m.target}** ({_describe(m.target_detail)})"]
    for v, why in m.variant_fallbacks.items():
        lines += [f"- variant **{v}** ran on the reference target, not {m.target_requested or m.target}: {why}"]
    lines += [f"- git: `{m.git.commit}`" + (" (dirty tree)" if m.git.dirty else "")]
    if ds is not None:
        lines += [f"- dataset: {ds.name} ({ds.source}), {ds.packets} packets, {ds.flows} flows, classes: "
                  f"{', '.join(ds.classes)}"]
        if ds.split_packets:
            rule = ds.split_rule or f"flows 75/10/15, seed {cfg.get('seed')}"
            lines += [f"- splits ({rule}): {ds.split_packets}"]
    lines += [""]
    lines += [f"> {n}" for n in (data_notes(ds) if ds is not None else [])] + [""]
    return lines


def accounting(run: RunView) -> list[str]:
    ds = run.manifest.dataset
    acc = ds.accounting if ds is not None else {}
    if not acc:
        return []
    return ["## Packet accounting", "", "Every packet of the dataset is in exactly one row:", "",
            table(pd.DataFrame({"category": list(acc), "packets": list(acc.values())}), ["packets"]), ""]


def replay_accounting(df: pd.DataFrame, key: str = "variant") -> list[str]:
    cols = [c for c in ("replayed", "verdicts", "not_sent", "dropped_by_capture", "lost") if c in df]
    if not cols:
        return []
    lines = ["Every replayed frame ends as exactly one of: a verdict, not sent (reason below), dropped by the "
             "capture (the kernel's count at h2), or lost (no tool reports it):", "", table(df[[key, *cols]], cols),
             ""]
    reasons = sorted({r for r in df.get("not_sent_reason", pd.Series(dtype=str)).dropna() if r})
    cuts = pd.to_numeric(df.get("cut_frames", pd.Series(dtype=float)), errors="coerce").fillna(0)
    cut = int(cuts.max()) if len(cuts) else 0
    snapped = [f"Up to {cut} frames per replay were longer than the replay snap (coalesced by the capturing host) "
               "and were sent cut to it, headers and IP total length kept: every target classifies them as the "
               "whole frames (docs/pipeline.md, 'Frame length')."] if cut else []
    return lines + [f"Not sent: {r}." for r in reasons] + snapped + ([""] if reasons or snapped else [])


def reproduce(run: RunView, extra: str = "") -> list[str]:
    m = run.manifest
    data_flag = f" --dataset {m.dataset_override}" if m.dataset_override else ""
    name = run.config.get("name", m.experiment)
    target = m.target_requested or m.target
    clock = f" --clock {m.clock}" if m.clock else ""
    lines = ["## Reproduce", "", f"    invoke run-experiment --name {name} --target {target}{clock}{data_flag}{extra}",
             ""]
    t = m.timings_s
    if t:
        lines += [f"Timings (s): {', '.join(f'{k} {v:.1f}' for k, v in t.items())}", ""]
    return lines


def figure_lines(run: RunView, figs: list[str]) -> list[str]:
    return [f"![{f.rsplit('/', 1)[-1].rsplit('.', 1)[0]}]({f})" for f in figs if f.endswith(".png")]
