"""``invoke republish --stale``: re-run, from committed code, every experiment run the book cites whose code has
moved on, publish each, and re-render the book.

A cited run is the newest published run of its experiment, target and dataset (what the book selects). Each is
re-run as it was made: the same experiment (its YAML as committed now), target, clock and dataset directory; a
sweep from its own record (the same experiment, seeds, datasets, target and executor). Runs that are neither
(benches, nights, fuzz and mutation runs, the fresh-machine check) are listed with the command that remakes them.
A run whose target cannot run here is listed with the reason. The plan and its expected time (each run's own wall
time, scaled to the work its experiment does now: chimera.book.remake) come first; ``--dry-run`` stops there.
"""

from __future__ import annotations

import functools
import logging
import math
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chimera.book.remake import Expected, expected, remake, sweep_command
from chimera.book.scope import published_book
from chimera.report.book import Book
from chimera.book.claims import rules_fixed_before
from chimera.report.runs import Run
from chimera.book.scope import run_scope
from chimera.errors import ChimeraError, ResultsError
from chimera.book.carry import drop_resumed
from chimera.book.resume import run_resuming, stopped_runs
from chimera.formats.rundir import Manifest, git_state
from chimera.report.provenance import ROOT
from chimera.sweep.driver import SweepRecord

log = logging.getLogger(__name__)


@dataclass
class Rerun:
    """An experiment run, made again as it was made: its experiment (the YAML as committed now), target, clock and
    dataset directory."""
    run: Run
    # dict[str, Any]: YAML overlay: experiment overrides, validated by load_experiment
    overrides: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def estimate(self) -> Expected:
        """Its own wall time, scaled to the experiment's work now (chimera.book.remake)."""
        return expected(self.run, self.overrides or None)

    @property
    def expected_min(self) -> float:
        return self.estimate.minutes

    def describe(self) -> str:
        data = Path(self.run.manifest.dataset_override or "").name or "its own data"
        return f"{self.run.experiment} on {self.run.target} ({data})"

    def execute(self, results_root: Path, data_root: Path) -> Path:
        """Run it; a stopped run of it from the same code (a republish cut short: the end of a session, Ctrl-C)
        is resumed, its finished units kept."""
        from chimera.experiments.load import load_experiment
        r = self.run
        return run_resuming(load_experiment(r.experiment, self.overrides or None), r.target, results_root,
                            results_root, data_root=data_root, experiment_file=r.experiment,
                            dataset_override=r.manifest.dataset_override or "", clock=r.manifest.clock)


@dataclass(kw_only=True)
class SweepRerun(Rerun):
    """A sweep, made again from its own record: the same experiment, seeds, datasets, target and executor (a Ray
    sweep runs on a local Ray instance of its own; the cluster it may have used is not this machine's to join)."""
    sweep: SweepRecord

    def describe(self) -> str:
        data = ", ".join(Path(d).name for d in self.sweep.datasets or []) or "its own data"
        seeds = self.sweep.seeds
        span = f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ",".join(map(str, seeds))
        return f"sweep of {self.sweep.experiment}, seeds {span} ({data})"

    def command(self) -> str:
        """The command line that makes this sweep by hand."""
        return sweep_command(self.sweep)

    def execute(self, results_root: Path, data_root: Path) -> Path:
        from chimera.sweep.driver import sweep
        sw = self.sweep
        log.info("republish: as `%s`", self.command())
        target = "" if sw.target == SweepRecord.DEFAULT_TARGET else sw.target

        def same_sweep(m: Manifest, p: Path) -> bool:
            had = m.get("sweep", SweepRecord)
            return had is not None and (had.experiment, had.seeds, had.datasets, had.target) == \
                (sw.experiment, sw.seeds, sw.datasets, sw.target) and any((p / "work").glob("*/results/*/*/"))
        stopped = next(iter(stopped_runs(results_root / self.run.experiment, same_sweep)), None)  # sweep-<name>
        if stopped is not None:
            log.info("republish: resuming the stopped sweep %s (its completed tasks are kept)", stopped)
        return sweep(sw.experiment, sw.seeds, sw.datasets, target, None, sw.retries, results_root, data_root,
                     executor=sw.executor, resume=stopped)


def shares_the_machine(x: Rerun) -> bool:
    """Whether ``x`` may run beside another rerun (``--jobs``): one process on one CPU (torch on one thread,
    chimera.determinism) and no testbed, so nothing it measures depends on what runs beside it. A sweep takes every
    CPU through Ray, and a testbed run holds the machine's testbed lock and replays at a pace: those run alone."""
    from chimera.targets.base import Capability
    from chimera.targets.registry import target_class
    return not isinstance(x, SweepRerun) and not target_class(x.run.target).capabilities & Capability.TESTBED


@dataclass(frozen=True)
class Outcome:
    """What a rerun in a worker process sends back: the run it made, or why it failed (a ChimeraError's hint
    does not survive pickling, so its message comes back as text)."""
    made: Path | None
    error: str | None = None


def execute_apart(x: Rerun, results_root: Path, data_root: Path) -> Outcome:
    """Run ``x``; its failure comes back as its message. In a spawned worker process of ``--jobs`` (no logging set
    up yet) its log lines say which experiment speaks."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, datefmt="%H:%M:%S",
                            format=f"%(asctime)s %(levelname)-7s [{x.run.experiment}] %(name)s: %(message)s")
    try:
        return Outcome(x.execute(results_root, data_root))
    except ChimeraError as e:
        return Outcome(None, str(e))


@dataclass
class Plan:
    reruns: list[Rerun]
    elsewhere: list[tuple[Run, str]]     # stale, and remade another way or not here: why / how

    @property
    def expected_min(self) -> float:
        return sum(r.expected_min for r in self.reruns if not math.isnan(r.expected_min))


def uncounted(r: Run) -> bool:
    """Whether the ledger leaves ``r``'s verdicts uncounted: the verdict rules changed after its commit."""
    return rules_fixed_before(r.manifest.git.commit, r.root) is False


def plan(book: Book, only: tuple[str, ...] = (), also_uncounted: bool = False) -> Plan:
    """What to re-run: every cited run whose code has moved on (and, ``also_uncounted``, every one made before
    the rules last changed), its experiment among ``only`` where given."""
    from chimera.targets.registry import target_class
    reruns: list[Rerun] = []
    elsewhere: list[tuple[Run, str]] = []
    for r in book.runs.newest_each():
        due = not r.freshness.fresh or (also_uncounted and uncounted(r))
        if not due or (only and r.experiment not in only):
            continue
        sw = r.manifest.get("sweep", SweepRecord)
        if sw is None and not (book.root / "experiments" / f"{r.experiment}.yaml").is_file():
            how = remake(r.experiment, r.target) or (f"invoke bench --what {r.experiment.removeprefix('bench-')}"
                                               if r.experiment.startswith("bench-") else "its own command")
            elsewhere.append((r, f"not an experiment: remake it with `{how}`, then `invoke publish RUN_DIR`"))
            continue
        target = r.target if sw is None else sw.target   # a sweep on its experiment's target names none
        why = None if target == SweepRecord.DEFAULT_TARGET else target_class(target).unavailable_reason()
        if why is not None:
            elsewhere.append((r, f"target {target} cannot run here: {why}"))
            continue
        if sw is not None:
            reruns.append(SweepRerun(r, sweep=sw))
            continue
        over: dict[str, Any] = {}  # YAML overlay: experiment overrides, validated by load_experiment
        if r.manifest.dataset_override:
            over = {k: r.manifest.config[k] for k in ("dataset", "datasets") if r.manifest.config.get(k)}
        reruns.append(Rerun(r, over))
    return Plan(reruns, elsewhere)


def announce(p: Plan, jobs: int = 1) -> None:
    log.info("republish: %d stale or uncounted cited runs to re-run, expected %.0f min (each run's own wall time, "
             "scaled to its experiment's work now):", len(p.reruns), p.expected_min)
    for x in p.reruns:
        why = x.run.freshness.mark().strip(" *[]") or "fresh, but made before the rules last changed"
        together = " [shares the machine]" if jobs > 1 and shares_the_machine(x) else ""
        log.info("  %-50s ~%.1f min  (%s; %s)%s", x.describe(), x.expected_min, x.estimate.note(), why, together)
    if jobs > 1:
        shared = sum(x.expected_min for x in p.reruns if shares_the_machine(x) and not math.isnan(x.expected_min))
        log.info("republish: with --jobs %d, about %.0f min of wall time: the %.0f min that share the machine, %d "
                 "at a time, then the rest alone", jobs, p.expected_min - shared + shared / jobs, shared, jobs)
    for r, why in p.elsewhere:
        log.info("  %-50s not here: %s", f"{r.experiment} on {r.target}", why)


def republish(only: tuple[str, ...] = (), dry_run: bool = False, results_root: Path = ROOT / "results",
              data_root: Path = Path("data"), uncounted: bool = False, jobs: int = 1) -> list[Path]:
    """Re-run and publish every stale cited experiment run (``only``: these experiments; ``uncounted``: also the
    fresh ones made before the rules last changed); returns the published directories. Refuses a dirty tree first:
    a published run must be made from committed code. ``jobs`` > 1: the reruns that share the machine
    (``shares_the_machine``) run that many at a time, each in a process of its own, before the others run alone."""
    from chimera.book.render import write
    from chimera.report.publish import publish
    book = published_book()
    p = plan(book, only, uncounted)
    announce(p, jobs)
    if dry_run or not p.reruns:
        return []
    git = git_state(ROOT)
    if git.dirty:
        raise ResultsError("the working tree has uncommitted changes: a republished run would not be made from "
                           "committed code", "commit (or stash) the changes, then run invoke republish again")
    out: list[Path] = []
    failed: dict[str, str] = {}
    t0 = time.monotonic()

    def published(x: Rerun, o: Outcome) -> None:
        try:
            if o.made is not None:
                out.append(publish(o.made, scope=run_scope(o.made)))
                drop_resumed(out[-1])   # the carried work it resumed is in it now
                return
        except ChimeraError as e:
            o = Outcome(None, str(e))
        failed[x.describe()] = o.error or "it failed"
        log.error("republish: %s failed: %s", x.describe(), o.error)

    together: list[Rerun] = []
    alone: list[Rerun] = []
    for x in p.reruns:
        (together if jobs > 1 and shares_the_machine(x) else alone).append(x)
    if together:
        log.info("republish: %d runs %d at a time, each in a process of its own (~%.0f min of their own), then %d "
                 "alone", len(together), jobs, sum(x.expected_min for x in together if not math.isnan(x.expected_min)),
                 len(alone))
        with ProcessPoolExecutor(min(jobs, len(together)), mp_context=multiprocessing.get_context("spawn")) as ex:
            running = {ex.submit(execute_apart, x, results_root, data_root): x for x in together}
            for f in as_completed(running):
                x = running[f]
                log.info("republish: %s done (%.1f min elapsed)", x.describe(), (time.monotonic() - t0) / 60)
                published(x, f.result())
    for x in alone:
        log.info("republish: %s (~%.1f min; %.1f min elapsed)", x.describe(), x.expected_min,
                 (time.monotonic() - t0) / 60)
        published(x, execute_apart(x, results_root, data_root))
    if out:
        from chimera.report.archive import prune
        prune()  # the archive rule: the runs these replace leave results/published/ for results/history/
    changed = write()
    log.info("republish: %d published, %d failed; %d pages re-rendered (review and commit them)", len(out),
             len(failed), len(changed))
    if failed:
        raise ResultsError("republish: " + "; ".join(f"{k}: {v.splitlines()[0]}" for k, v in failed.items()),
                           "fix what failed, commit, and run invoke republish --stale again (fresh runs are kept)")
    return out


