"""``invoke nightly``: the suite of ``results/baseline/nightly.yaml``, checked against the golden baseline, appended
to the history, shown on the dashboard.

A target the suite lists must run unless the suite allows it to be absent (``allow_skip``, with the reason);
``--require`` makes targets mandatory for one night. Everything lands in ``results/nightly/<run>/`` (manifest,
checks.csv, summary.md, trend figures, the experiment runs under runs/) and the dashboard in
``results/nightly/site/``. The exit status is non-zero when anything regressed or failed to run; the golden moves
only with --update-baseline, which refuses such a night unless forced, with a reason.
"""

from __future__ import annotations

import datetime as dt
import getpass
import logging
import socket
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from chimera.errors import ChimeraError, ConfigError
from chimera.experiments.kinds.base import NightlyTrack
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.registry import environment
from chimera.fuzz.mutate import ROUNDS_CAP_S, target_of
from chimera.nightly.checks import (Check, RunKey, Status, bench_checks, experiment_checks, failed, fuzz_checks,
                                    mutate_checks, on_testbed, summary_markdown)
from chimera.nightly.config import NightlyConfig, load_suite
from chimera.book.scope import run_scope
from chimera.nightly.floats import float_probe
from chimera.nightly.golden import (FORMAT_VERSION, GOLDEN, ROOT, code_changes, load_golden, other_floats,
                                    run_codes, save_golden)
from chimera.report.provenance import Scope, TreeCode
from chimera.nightly.history import append_history, history_rows, load_history, trend_figures
from chimera.report.sections import (BenchStat, ExperimentNight, FuzzNight, MutateNight, MutateResult,
                                     NightMeasured, NightRecord, section)
from chimera.testbed.pacing import host_key

log = logging.getLogger(__name__)
BASELINE_DIR = ROOT / "results" / "baseline"


def tracked(out: Path, track: NightlyTrack, testbed: bool, run: str | None = None) -> ExperimentNight:
    """What the nightly reads from a run: the kind's F1 per row key, its counters (a testbed run's counter that is
    missing is unknown, not absent), the unaccounted frames, the clock."""
    df = track.table.read(out)
    keys = df[track.key].astype(str)

    def ints(col: pd.Series) -> dict[str, int | None]:
        return {v: (None if pd.isna(x) else int(x)) for v, x in zip(keys, col)}
    counters: dict[str, dict[str, int | None]] = {}
    for c in track.counters:
        if c in df:
            counters[c] = ints(df[c])
        elif testbed:
            counters[c] = {v: None for v in keys}
    if {"replayed", "verdicts", "not_sent", "dropped_by_capture", "lost"} <= set(df.columns):
        counters["unaccounted"] = ints(df["replayed"] - df["verdicts"] - df["not_sent"] - df["dropped_by_capture"]
                                       - df["lost"])
    clock = str(df["clock"].dropna().iloc[0]) if "clock" in df and df["clock"].notna().any() else None
    return ExperimentNight(f1=dict(zip(keys, df[track.metric].astype(float))), clock=clock, run=run,
                           **counters)  # the counters are the model's own fields


def availability(cfg: NightlyConfig) -> tuple[dict[str, str], dict[str, str]]:
    """(targets allowed to be absent tonight -> why, targets that must run and cannot -> why, naming the tools)."""
    from chimera.targets.registry import describe_all
    why = describe_all()
    skipped, missing = {}, {}
    for t in cfg.targets():
        w = why.get(t, "not a registered target")
        if w is None:
            continue
        allowed = cfg.skip_reason(t)
        if allowed is not None:
            skipped[t] = f"{allowed} (here: {w})"
        else:
            missing[t] = (f"required target {t} cannot run: {w}" if t in cfg.require else
                          f"{t} cannot run ({w}) and the suite does not allow skipping it")
    return skipped, missing


def run_experiments(cfg: NightlyConfig, runs: Path, data_root: Path,
                    unavailable: tuple[dict[str, str], dict[str, str]]) -> NightMeasured:
    from chimera.experiments.kinds import kind_of
    from chimera.experiments.load import load_experiment
    from chimera.experiments.runner import run_experiment
    skip_t, miss_t = unavailable
    out = NightMeasured()
    for e in cfg.experiments:
        for target in e.targets:
            key = str(RunKey(e.label, target))
            if target in skip_t:
                out.skipped[key] = skip_t[target]
                log.info("[nightly] %s: allowed skip: %s", key, skip_t[target])
                continue
            if target in miss_t:
                out.failed[key] = miss_t[target]
                log.error("[nightly] %s: %s", key, miss_t[target])
                continue
            log.info("[nightly] %s", key)
            try:
                exp = load_experiment(e.name, cfg.overrides.get(e.name))
                track = kind_of(exp.kind).nightly
                if track is None:
                    raise ConfigError(f"kind {exp.kind} declares nothing for the nightly to track",
                                      "give its Kind record a NightlyTrack, or leave it out of the suite")
                run = run_experiment(exp, target=target, results_root=runs, data_root=data_root)
                out.experiments[key] = tracked(run, track, on_testbed(target),
                                               run.relative_to(runs.parent).as_posix())
            except ChimeraError as err:
                out.experiments[key] = ExperimentNight(error=str(err))
    return out


def run_benches(cfg: NightlyConfig, unavailable: tuple[dict[str, str], dict[str, str]]) -> dict[str, BenchStat]:
    """Each of the suite's benches through its record (chimera.bench.BENCHES): what it tracks, the target it
    needs (skipped or failed as the suite says of that target)."""
    from chimera.bench import NightPrior, bench
    skip_t, miss_t = unavailable
    out: dict[str, BenchStat] = {}
    prior = NightPrior()   # what one bench leaves for the next
    for b in cfg.benches:
        rec = bench(b)
        assert rec.nightly is not None   # the suite's validation admits nightly benches only
        if rec.target in skip_t:
            continue
        if rec.target in miss_t:
            out[rec.metric or b] = BenchStat(error=miss_t[rec.target])
            continue
        log.info("[nightly] bench %s (%d repeats)", b, cfg.repeats)
        try:
            out.update({k: BenchStat.model_validate(v) for k, v in rec.nightly(cfg.repeats, prior).items()})
        except ChimeraError as e:
            out[rec.metric or b] = BenchStat(error=str(e))
    return out


def run_fuzz(cfg: NightlyConfig, out_dir: Path,
             unavailable: tuple[dict[str, str], dict[str, str]]) -> FuzzNight | None:
    """The night's fuzz (a budget or fixed rounds) on the suite's targets, with a seed that rotates with the date
    (or the suite's)."""
    if cfg.fuzz is None:
        return None
    from chimera.fuzz.run import FuzzConfig, fuzz
    skip_t, miss_t = unavailable
    targets = [t for t in cfg.fuzz.targets if t not in skip_t and t not in miss_t]
    seed = cfg.seed if cfg.seed is not None else int(dt.date.today().strftime("%Y%m%d"))
    try:
        rounds = cfg.fuzz.rounds or 0
        # fixed rounds: the draw is the seed's alone (no saved failures replayed first); ROUNDS_CAP_S only ends a hang
        res = fuzz(FuzzConfig(targets=tuple(targets), budget_s=ROUNDS_CAP_S if rounds else cfg.fuzz.budget_s,
                              seed=seed, rounds=rounds, database=not rounds), results_root=out_dir)
    except ChimeraError as e:
        return FuzzNight(error=str(e))
    return FuzzNight.model_validate(
        {"sequences": res.sequences, "differences": len(res.failures), "seed": seed, "targets": targets,
         "failures": [f.describe() for f in res.failures], "run": res.run_dir.relative_to(out_dir.parent).as_posix(),
         "coverage": res.coverage_summary(),
         "skipped": {t: skip_t[t] for t in cfg.fuzz.targets if t in skip_t},
         "failed": {t: miss_t[t] for t in cfg.fuzz.targets if t in miss_t}})


def run_mutate(cfg: NightlyConfig, out_dir: Path, unavailable: tuple[dict[str, str], dict[str, str]],
               today: dt.date | None = None, triage_file: Path | None = None) -> MutateNight | None:
    """The night's mutation sample, judged against the triage (chimera.fuzz.triage): a kill lost or a survivor
    untriaged too long fails the night; new survivors are written to the triage as untriaged; the score over every
    mutant drawn so far (the published runs' and tonight's) is reported. A file whose target cannot run tonight is
    an allowed skip or a failure, as the suite says of that target."""
    if cfg.mutate is None:
        return None
    import math

    from chimera.fuzz import triage as tr
    from chimera.fuzz.mutate import MutateConfig, mutate
    m = cfg.mutate
    today = today or dt.date.today()
    triage_file = triage_file or tr.TRIAGE
    skip_t, miss_t = unavailable
    target = {f: target_of(f).name for f in m.files}
    files = [f for f in m.files if target[f] not in skip_t and target[f] not in miss_t]
    seed = cfg.seed if cfg.seed is not None else int(today.strftime("%Y%m%d"))
    out = MutateNight(files=files, night=today.isoformat(),
                      skipped={f: skip_t[target[f]] for f in m.files if target[f] in skip_t},
                      failed={f: miss_t[target[f]] for f in m.files if target[f] in miss_t})
    if not files:
        return out
    try:
        triage = tr.load(triage_file)
        run = mutate(MutateConfig(files=tuple(files), budget_s=m.budget_s or math.inf, seed=seed,
                                  fuzz_rounds=m.fuzz_rounds, max_mutants=m.per_file), out_dir)
        tonight = pd.read_csv(run / "mutants.csv", dtype={"id": str})
        findings = tr.verdict(tonight, triage, today, m.untriaged_days, files)
        new = tr.record_new(tonight[tonight["status"] == "survived"], today, triage_file)
        every = pd.concat([tr.every_outcome(ROOT / "results" / "published"), tonight], ignore_index=True)
        cum = tr.cumulative(every, tr.load(triage_file))
        from chimera.formats.rundir import Manifest
        res = section(Manifest.read(run / "manifest.json"), "mutate_result", MutateResult)
    except ChimeraError as e:
        return out.model_copy(update={"error": str(e)})
    return MutateNight.model_validate(
        {**out.model_dump(), "scores": {k: v.model_dump() for k, v in (res.scores if res else {}).items()},
         "run": run.relative_to(out_dir.parent).as_posix(), "findings": [asdict(f) for f in findings],
         "new_untriaged": new, "cumulative": cum})


def golden_measured(measured: NightMeasured) -> dict[str, Any]:  # JSON out: what the golden file stores
    """What a golden keeps of a night: F1 and counters per run, bench medians (for the record). A dict: it is
    written as JSON (chimera.nightly.golden reads it back with the same models)."""
    keep = {"f1", "reference_mismatches", "register_mismatches", "lost", "clock"}
    return {"experiments": {k: m.model_dump(include=keep, exclude_none=True)
                            for k, m in measured.experiments.items() if m.error is None},
            "benches": {k: s.model_dump(include={"median", "iqr", "n"}) for k, s in measured.benches.items()
                        if s.median is not None}}


def nightly(cfg: NightlyConfig | None = None, *, update_baseline: bool = False, force: bool = False, reason: str = "",
            baseline_dir: Path = BASELINE_DIR, history: Path | None = None, results_root: str | Path = "results",
            data_root: Path = Path("data"), site: bool = True, book: bool = True) -> tuple[Path, bool]:
    """Run the suite and its checks; returns (the nightly run directory, whether the night failed)."""
    cfg = cfg or load_suite()
    if force and not update_baseline:
        raise ConfigError("--force only applies to --update-baseline", "drop --force")
    if force and not reason.strip():
        raise ConfigError("--force makes a failing night the golden: say why", "add --reason '...'")
    history = history or Path(results_root) / "nightly" / "history.csv"
    have_golden = (baseline_dir / GOLDEN).is_file()
    golden = (load_golden(baseline_dir, any_format=update_baseline) if have_golden or not update_baseline
              else None)  # named before any work
    if golden is not None and golden.format_version != FORMAT_VERSION:  # only with --update-baseline
        log.warning("%s has format version %s: tonight is not checked against it, and becomes the golden if it runs",
                    baseline_dir / GOLDEN, golden.format_version)
        golden = None
    hist = load_history(history)  # a corrupt history: named before any work
    tree = TreeCode(ROOT)   # the code tonight runs, read once: every fingerprint of the night comes from it
    code, git, host = tree.fingerprint(), git_state(ROOT), host_key()
    probe = float_probe()   # whose floats tonight's training gives (chimera.nightly.floats)
    unavailable = availability(cfg)
    if unavailable[1]:  # a requirement that cannot be met stops the night before its first experiment
        raise ConfigError("; ".join(unavailable[1].values()),
                          "install what it names (the BMv2 and p4c steps: docs/reproducibility.md), drop the target "
                          "from --require, or allow skipping it in the suite's allow_skip")
    with RunDir(results_root, "nightly", "local") as run:
        meta = {"run_id": run.run_id, "git": git.commit, "code": code, "host": host, "float_probe": probe,
                "golden_git": golden.git if golden else None, "golden_code": golden.code if golden else None}
        record = NightRecord(suite=cfg.model_dump(), code=code, host=host, golden=meta["golden_git"],
                             skipped_targets=unavailable[0], missing_targets=unavailable[1])
        run.manifest.record(git=git, environment=environment())
        run.manifest.put("nightly", record)
        measured = NightMeasured()
        step = "experiments"
        t0 = time.perf_counter()

        scopes: dict[str, Scope] = {}

        def all_checks() -> list[Check]:
            scopes.update({k: run_scope(run.path / m.run) for k, m in measured.experiments.items()
                           if m.run and (run.path / m.run / "manifest.json").is_file()})
            changes = other_floats(code_changes(golden, scopes, tree), golden, probe)
            return (experiment_checks(measured, golden,
                                      lambda k: changes.get(k, "no run directory to read its code from"))
                    + bench_checks(measured, hist, golden, host)
                    + fuzz_checks(measured.fuzz) + mutate_checks(measured.mutate))

        try:
            measured = run_experiments(cfg, run.path / "runs", data_root, unavailable)
            step = "benches"
            measured.benches = run_benches(cfg, unavailable)
            step = "fuzz"
            measured.fuzz = run_fuzz(cfg, run.path / "runs", unavailable)
            step = "mutate"
            measured.mutate = run_mutate(cfg, run.path / "runs", unavailable)
        except KeyboardInterrupt:
            meta["interrupted"] = step
            (run.path / "summary.md").write_text(summary_markdown(all_checks(), meta))
            log.error("nightly interrupted during %s; summary in %s; the history is unchanged", step, run.path)
            raise
        checks = all_checks()
        bad = failed(checks)
        status = Status.REGRESSED if bad else Status.PASS
        pd.DataFrame([c.row() for c in checks]).to_csv(run.path / "checks.csv", index=False)
        run.manifest.put("measured", measured)
        run.manifest.put("nightly", record.model_copy(update={"seconds": time.perf_counter() - t0, "regressed": bool(bad)}))
        (run.path / "summary.md").write_text(summary_markdown(checks, meta))
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        common = {"run_id": run.run_id, "time": now, "git": git.commit, "code": code, "host": host,
                  "night_status": status}
        rows = history_rows(common, measured)
        append_history(history, rows)
        trend_figures(load_history(history), run.path / "figures")
    if book:  # the ledger and the pages from tonight's runs: a night that moves a verdict or a number says so
        from chimera.book.night import night_book
        nb = night_book(run.final, ROOT)
        with (run.final / "summary.md").open("a") as fh:
            fh.write("\n" + nb.markdown())
        log.info("nightly: %d claim verdicts change tonight, %d book blocks move (%s)", len(nb.changed_verdicts),
                 len(nb.changed_blocks), run.final / "summary.md")
    log.info("nightly %s: %s (%s)", run.final, "REGRESSED" if bad else "pass", run.final / "summary.md")
    if site:
        from chimera.nightly.dashboard import write_site
        write_site(history, Path(results_root) / "nightly", golden if not update_baseline else None)
    if update_baseline:
        if bad and not force:
            raise ConfigError(f"the night {run.final.name} regressed or failed to run: refusing to make it the golden "
                              f"(see {run.final / 'summary.md'})",
                              "fix what failed and run again, or --force --reason '...' to accept it knowingly")
        p = save_golden(baseline_dir, golden_measured(measured),
                        {"git": git.commit, "code": code, "taken": now, "from_run": run.final.name, "host": host,
                         "float_probe": probe,
                         "codes": run_codes(scopes, tree)},
                        {"by": f"{getpass.getuser()}@{socket.gethostname()}", "at": now, "reason": reason,
                         "forced": bool(force and bad), "from_run": run.final.name, "git": git.commit, "code": code,
                         "night_status": status})
        log.info("golden baseline updated: %s%s", p, " (forced past a failing night)" if bad else "")
    return run.final, bad
