"""The book: publish a run, render the pages from published runs, republish stale ones, reproduce the ledger."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from invoke import Context, Exit, task

from tasks._common import cli


@task(help={"run_dir": "a complete run directory (results/<experiment>/<run-id>) made from committed code"})
@cli
def publish(c: Context, run_dir: str, verbose: bool = False) -> None:
    """Copy a run's light files into results/published/ (committed): the evidence the README cites."""
    from chimera.book.scope import run_scope
    from chimera.report.archive import prune
    from chimera.report.publish import publish as run
    from chimera.report.provenance import EVERYTHING
    rd = Path(run_dir)
    scope = run_scope(rd) if (rd / "manifest.json").is_file() else EVERYTHING  # publish names a missing manifest
    dest = run(rd, scope=scope)
    logging.getLogger("tasks").info("published: %s", dest)
    prune()  # the archive rule: older runs of the same experiment, target and data leave the tree
    from chimera.book.carry import drop_resumed
    drop_resumed(dest)  # the carried work it resumed is in it now


@task(help={"path": "a stopped or running run's or sweep's folder (results/<name>/.<run>.partial or "
                    ".failed/<run>); default: every one under results/ that finished a part",
            "dry_run": "say what would be carried, copy nothing"})
@cli
def carry(c: Context, path: str = "", dry_run: bool = False, verbose: bool = False) -> None:
    """Keep the finished parts of a stopped run or sweep for the next machine: copy them into results/carried/
    (commit it); `invoke republish` there resumes them (chimera/book/carry.py)."""
    from chimera.book.carry import carry as keep, tree_bytes, unfinished_here
    from chimera.paths import RESULTS
    log = logging.getLogger("tasks")
    todo = [Path(path)] if path else unfinished_here(RESULTS)
    if not todo:
        log.info("nothing to carry: no run or sweep under results/ finished a part and stopped short")
    for p in todo:
        if dry_run:
            log.info("would carry %s", p)
            continue
        keep(p)   # it says what it carried
    if todo and not dry_run:
        log.info("results/carried: %.1f MiB; commit it (git add results/carried) for the next machine",
                 tree_bytes() / 2**20)


@task(name="prune", help={"dry_run": "say what the rule would retire, change nothing"})
@cli
def prune_(c: Context, dry_run: bool = False, verbose: bool = False) -> None:
    """Apply the results archive's rule (chimera/report/archive.py): older runs leave results/published/ for
    results/history/ (manifest and headline values; their files stay in git history)."""
    from chimera.report.archive import BUDGET_BYTES, plan, policy, prune, tree_bytes
    log = logging.getLogger("tasks")
    if dry_run:
        for r in plan():
            log.info("would retire %s (%s)", r.path.name, policy(r.manifest.experiment).why)
        log.info("results/published: %.1f MiB of a %.0f MiB budget", tree_bytes() / 2**20, BUDGET_BYTES / 2**20)
        return
    from chimera.book.carry import prune_carried
    gone = prune()
    prune_carried()   # carried work whose code moved on can never be resumed
    log.info("retired %d run(s); results/published: %.1f MiB of a %.0f MiB budget", len(gone), tree_bytes() / 2**20,
             BUDGET_BYTES / 2**20)


@task(help={"check": "re-render in memory and fail on any difference (the README test), writing nothing",
            "history": "list the runs of this experiment that left results/published/ (the archive rule), with "
                       "how to restore each, and render nothing"})
@cli
def book(c: Context, check: bool = False, history: str = "", verbose: bool = False) -> None:
    """Render every measured number of README.md, docs/*.md and docs/claims.md from results/published/."""
    from chimera.book.render import check as diff, write
    log = logging.getLogger("tasks")
    if history:
        from chimera.report.archive import history_table, restore_hint
        df = history_table(history)
        if not len(df):
            raise Exit(f"no retired runs of {history!r} under results/history/ (the published ones are in "
                       "results/published/)", code=1)
        for row in df.to_dict("records"):
            heads = {k: v for k, v in row.items() if ":" in str(k) and v != ""}
            log.info("%s  %s %s  commit %s  %s  restore: %s", row["run_id"], row["target"], row.get("data") or "",
                     str(row["commit"])[:7], "; ".join(f"{k} {float(v):.4g}" for k, v in heads.items()),
                     restore_hint(row))
        return
    if check:
        bad = diff()
        for d in bad:
            log.error("%s", d)
        if bad:
            raise Exit(f"{len(bad)} block(s) differ from their rendering: run `invoke book`", code=1)
        log.info("the book is as its runs render it")
        return
    changed = write()
    log.info("book: %d page(s) re-rendered%s", len(changed), "".join(f"\n  {p}" for p in changed))


@task(help={"stale": "re-run every cited experiment run whose code has moved on (required: says what it does)",
            "uncounted": "also re-run every cited experiment run made before the verdict rules "
                         "(chimera/book/rules.py) last changed: the ledger shows its verdicts but does not count them",
            "only": "comma-separated experiments: just these", "dry_run": "print the plan and its expected time",
            "jobs": "run this many testbed-free single-process reruns at a time, each in a process of its own (the "
                    "sweeps and the testbed runs still run alone, after them); at most the CPU count"})
@cli
def republish(c: Context, stale: bool = False, uncounted: bool = False, only: str = "", dry_run: bool = False,
              jobs: int = 1, verbose: bool = False) -> None:
    """Re-run the stale runs the book cites from committed code, publish them and re-render the book."""
    from chimera.errors import ConfigError
    if not stale:
        raise ConfigError("invoke republish re-runs the stale cited runs (and, with --uncounted, the uncounted ones)",
                          "say so: invoke republish --stale [--uncounted]")
    from chimera.book.republish import republish as run
    if not 1 <= jobs <= (os.cpu_count() or 1):
        raise ConfigError(f"--jobs {jobs}: this machine has {os.cpu_count()} CPUs, and each rerun takes one",
                          f"give --jobs between 1 and {os.cpu_count()}")
    run(tuple(x for x in only.split(",") if x), dry_run=dry_run, uncounted=uncounted, jobs=jobs)


@task(help={"quick": "the steps of the ledger that take minutes (leaves out Table 1, Table 2 and the window "
                     "figure)", "dry_run": "print the plan and its expected time, run nothing",
            "resume": "a stopped reproduction (results/reproduce/.<run-id>.partial or .failed/<run-id>): keep "
                      "the steps it finished whose code has not changed since, run the others"})
@cli
def reproduce(c: Context, quick: bool = False, dry_run: bool = False, resume: str = "", verbose: bool = False) -> None:
    """Run what docs/claims.md needs on this machine; its ledger beside the published one, claim by claim."""
    from chimera.book.reproduce import reproduce as run
    run(quick=quick, dry_run=dry_run, resume=Path(resume) if resume else None)
