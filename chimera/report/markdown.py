"""report.md: what a reader of the run needs, in one page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

SAMPLE_NOTE = ("This dataset is the small real CICIoT2022 sample (one device, ~8,000 packets): far too small to "
               "reproduce the paper's CICIoT figures. Treat these numbers as a functional check on real traffic.")


INT_COLUMNS = ("bits_per_flow", "table_entries", "support", "hard_vetoes", "evictions", "unparsed", "lost",
               "reference_mismatches", "packets")


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
                 target: Any, manifest: dict[str, Any]) -> None:
    m = manifest
    lines = [f"# {cfg.name}: {cfg.description or 'Chimera experiment'}", "",
             f"- run: `{m['run_id']}` on target **{target.name}** ({_describe(target)})",
             f"- git: `{(m.get('git') or {}).get('commit')}`" + (" (dirty tree)" if (m.get("git") or {}).get("dirty") else ""),
             f"- dataset: {ds.manifest['name']} ({ds.manifest['source']}), {len(ds.table)} packets, "
             f"{ds.flows.n_flows} flows, classes: {', '.join(ds.classes)}",
             f"- splits (flows 75/10/15, seed {cfg.seed}): {m['dataset']['split_packets']}",
             f"- parse outcomes: {ds.manifest.get('status')}", ""]
    if "ciciot2022" in str(ds.manifest.get("source", "")):
        lines += [f"> {SAMPLE_NOTE}", ""]
    if ds.manifest.get("source") == "synthetic":
        lines += ["> Synthetic traffic from chimera.data.synthetic (shaped like the real dataset, not the real "
                  "data); numbers are ours, measured on this build, never the paper's.", ""]
    cols = ["group", "variant", "software_only", "macro_f1", "macro_precision", "macro_recall", "bits_per_flow",
            "table_entries", "table_kbits", "float_int_agreement", "executed_on"]
    t = ablation[[c for c in cols if c in ablation]].copy()
    t["variant"] = t["variant"] + t["software_only"].map({True: " †", False: ""})
    t = t.drop(columns=["software_only"])
    lines += ["## Results (test split, packet level)", "", _table(t), "",
              "† control-plane only: cannot run in a switch; evaluated by the float software classifier.",
              "bits_per_flow: all per-flow register state the build needs; table_entries/kbits: all tables "
              "(the window table counted once per window slot, as the P4 program stamps it).", ""]
    if m.get("figures"):
        lines += ["## Figures", ""] + [f"![{Path(f).stem}]({f})" for f in m["figures"] if f.endswith(".png")] + [""]
    main = ablation.iloc[0]["variant"]
    lines += [f"## Per class: {main}", "", _table(per_class[per_class["variant"] == main].drop(columns=["variant"])), ""]
    extra = [c for c in ("hard_vetoes", "evictions", "unparsed", "lost", "reference_mismatches",
                         "latency_switch_p50_us", "latency_switch_p99_us", "latency_host_p50_us",
                         "latency_host_p99_us", "install_ms") if c in ablation]
    if extra:
        lines += ["## Dataplane counters", "", _table(ablation[["variant", *extra]]), ""]
    if "reference_mismatches" in ablation:
        lines += ["reference_mismatches: packets whose verdict differs from the reference pipeline run on the same "
                  "frames with the switch's own timestamps (conformance; 0 is the only acceptable value). Latency: "
                  "in-switch from the verdict header's timestamps, host-to-host from the h1/h2 captures.", ""]
    lines += ["## Reproduce", "", f"    invoke run-experiment --name {cfg.name} --target {target.name}", "",
              f"Timings (s): {', '.join(f'{k} {v:.1f}' for k, v in m.get('timings_s', {}).items())}", ""]
    path.write_text("\n".join(lines))
