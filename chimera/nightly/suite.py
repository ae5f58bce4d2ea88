"""``invoke nightly``: a fixed suite, checked against the golden baseline, appended to the history.

Suite (<= 30 min here): quickstart on every target that can run (reference, eBPF, BMv2 where installed)
with conformance; the ablation and stability24h on the reference; the benches (ingest, reference,
install, switch), each with >= 5 repeats, median and IQR. Everything lands in
``results/nightly/<run>/`` (manifest, checks.csv, summary.md, trend figures; the experiment runs under
runs/). The exit status is non-zero on any regression; the golden moves only with --update-baseline.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from chimera.errors import ChimeraError
from chimera.experiments.kinds.base import NightlyTrack
from chimera.formats.rundir import RunDir, environment, git_state
from chimera.nightly.checks import bench_checks, experiment_checks, summary_markdown
from chimera.nightly.golden import ROOT, code_fingerprint, load_golden, save_golden
from chimera.nightly.history import append_history, load_history, trend_figures

log = logging.getLogger(__name__)
BASELINE_DIR = ROOT / "results" / "baseline"


@dataclass
class NightlyConfig:
    experiments: list[tuple[str, str]] = field(default_factory=lambda: [
        ("quickstart", "reference"), ("quickstart", "ebpf"), ("quickstart", "bmv2"), ("ablation", "reference"),
        ("stability24h", "reference")])
    benches: list[str] = field(default_factory=lambda: ["ingest", "reference", "install", "switch"])
    repeats: int = 5
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # per experiment name


def tracked(out: Path, track: NightlyTrack) -> dict[str, Any]:
    """What the nightly reads from a run: the kind's F1 per row key, its counters, the unaccounted frames."""
    df = track.table.read(out)
    keys = df[track.key].astype(str)
    r: dict[str, Any] = {"f1": dict(zip(keys, df[track.metric].astype(float)))}
    for c in track.counters:
        if c in df:
            r[c] = {v: (None if pd.isna(x) else int(x)) for v, x in zip(keys, df[c])}
    if {"replayed", "verdicts", "not_sent", "dropped_by_capture", "lost"} <= set(df.columns):
        un = df["replayed"] - df["verdicts"] - df["not_sent"] - df["dropped_by_capture"] - df["lost"]
        r["unaccounted"] = {v: (None if pd.isna(x) else int(x)) for v, x in zip(keys, un)}
    return r


def run_experiments(cfg: NightlyConfig, runs: Path, data_root: Path) -> tuple[dict[str, Any], dict[str, str]]:
    from chimera.experiments.kinds import kind_of
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    from chimera.targets.registry import describe_all
    why = describe_all()
    done: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name, target in cfg.experiments:
        key = f"{name}@{target}"
        if why.get(target):
            skipped[key] = f"target {target} cannot run here: {why[target]}"
            log.info("[nightly] %s skipped: %s", key, skipped[key])
            continue
        log.info("[nightly] %s", key)
        try:
            exp = load_experiment(name, cfg.overrides.get(name))
            track = kind_of(exp.kind).nightly
            assert track is not None, f"kind {exp.kind} declares nothing for the nightly to track"
            out = run_experiment(exp, target=target, results_root=runs, data_root=data_root)
            done[key] = {**tracked(out, track), "run": str(out)}
        except ChimeraError as e:
            done[key] = {"error": str(e)}
    return done, skipped


def run_benches(cfg: NightlyConfig) -> dict[str, Any]:
    from chimera.targets.registry import describe_all
    ebpf_why = describe_all().get("ebpf")
    out: dict[str, Any] = {}
    ingest = None
    for b in cfg.benches:
        log.info("[nightly] bench %s (%d repeats)", b, cfg.repeats)
        try:
            if b == "ingest":
                from chimera.bench.ingest import default_pcap, run
                ingest = run(default_pcap(), cfg.repeats)
                out["ingest_ratio"] = {"median": ingest["ratio"], "iqr": ingest["ratio_iqr"], "n": cfg.repeats,
                                       "results": ingest["results"]}
            elif b == "reference":
                from chimera.bench.reference import main as ref
                r = ref(cfg.repeats)
                if ingest is None:
                    out["reference_mpps"] = {"median": r["pps"] / 1e6, "iqr": r["pps_iqr"] / 1e6, "n": cfg.repeats}
                else:  # a ratio measured in one run: machine speed cancels
                    out["reference_over_ingest"] = {"median": r["pps"] / ingest["ours_pps"],
                                                    "iqr": r["pps_iqr"] / ingest["ours_pps"], "n": cfg.repeats}
            elif ebpf_why:
                out[f"{b}_ratio" if b == "switch" else "install_ebpf_live_ms"] = {"error": f"needs the eBPF testbed: "
                                                                                            f"{ebpf_why}"}
            elif b == "install":
                from chimera.bench.install import main as inst
                s = inst(("ebpf",))["ebpf"]["live"]
                out["install_ebpf_live_ms"] = {"median": s["median_ms"], "iqr": s["iqr_ms"], "n": s["n"]}
            elif b == "switch":
                from chimera.bench.switch import main as sw
                r = sw(cfg.repeats)
                out["switch_ratio"] = {"median": r["ratio"], "iqr": r["ratio_iqr"], "n": cfg.repeats,
                                       "results": r["results"]}
        except ChimeraError as e:
            out[b] = {"error": str(e)}
    return out


def nightly(cfg: NightlyConfig | None = None, *, update_baseline: bool = False, baseline_dir: Path = BASELINE_DIR,
            history: Path | None = None, results_root: str | Path = "results",
            data_root: Path = Path("data")) -> tuple[Path, bool]:
    """Run the suite and its checks; returns (the nightly run directory, whether anything regressed)."""
    cfg = cfg or NightlyConfig()
    history = history or Path(results_root) / "nightly" / "history.csv"
    golden = None if update_baseline else load_golden(baseline_dir)  # missing/old format: named before any work
    hist = load_history(history)  # a corrupt history: named before any work
    code = code_fingerprint()
    git = git_state(ROOT)
    with RunDir(results_root, "nightly", "local") as run:
        meta = {"run_id": run.run_id, "git": git.commit, "code": code,
                "golden_git": (golden or {}).get("git"), "golden_code": (golden or {}).get("code")}
        run.manifest.record(**{"nightly": {"experiments": cfg.experiments, "benches": cfg.benches,
                                         "repeats": cfg.repeats}, "git": git, "environment": environment(),
                             "code": code, "golden": meta["golden_git"]})
        measured: dict[str, Any] = {"experiments": {}, "benches": {}, "skipped": {}}
        step = "experiments"
        t0 = time.perf_counter()
        try:
            measured["experiments"], measured["skipped"] = run_experiments(cfg, run.path / "runs", data_root)
            step = "benches"
            measured["benches"] = run_benches(cfg)
        except KeyboardInterrupt:
            meta["interrupted"] = step
            checks = experiment_checks(measured, golden, code) + bench_checks(measured, hist, golden)
            (run.path / "summary.md").write_text(summary_markdown(checks, meta))
            log.error("nightly interrupted during %s; summary in %s; the history is unchanged", step, run.path)
            raise
        checks = experiment_checks(measured, golden, code) + bench_checks(measured, hist, golden)
        pd.DataFrame([c.row() for c in checks]).to_csv(run.path / "checks.csv", index=False)
        regressed = any(c.status == "regressed" for c in checks)
        run.manifest.record(**{"measured": measured, "seconds": time.perf_counter() - t0, "regressed": regressed})
        (run.path / "summary.md").write_text(summary_markdown(checks, meta))
        rows = [{"run_id": run.run_id, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "git": git.commit,
                 "code": code, "metric": f"{k}/{v}", "value": f1, "iqr": None}
                for k, m in measured["experiments"].items() for v, f1 in (m.get("f1") or {}).items()]
        rows += [{"run_id": run.run_id, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "git": git.commit,
                  "code": code, "metric": k, "value": s["median"], "iqr": s.get("iqr")}
                 for k, s in measured["benches"].items() if "median" in s]
        append_history(history, rows)
        trend_figures(load_history(history), run.path / "figures")
        if update_baseline:
            p = save_golden(baseline_dir, {"experiments": {k: {x: m[x] for x in ("f1", "reference_mismatches",
                                                                                "register_mismatches", "lost")
                                                                if x in m}
                                                           for k, m in measured["experiments"].items()
                                                           if "error" not in m},
                                           "benches": {k: {x: s[x] for x in ("median", "iqr", "n")}
                                                       for k, s in measured["benches"].items() if "median" in s}},
                            {"git": git.commit, "code": code, "taken": time.strftime("%Y-%m-%dT%H:%M:%S"),
                             "from_run": run.run_id})
            log.info("golden baseline updated: %s", p)
    log.info("nightly %s: %s (%s)", run.final, "REGRESSED" if regressed else "pass", run.final / "summary.md")
    return run.final, regressed
