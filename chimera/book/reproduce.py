"""``invoke reproduce [--quick]``: what the claims ledger needs, run on this machine, then the ledger for this
machine beside the published one (the ACM "Results Reproduced" flow in one command).

It prints the plan first (each step, the target it will run on, and its expected time: the wall time of the
newest published run of that step, measured on this project's 2-core machine, scaled to the work the step's
experiment does now: chimera.book.remake), refuses nothing it cannot
run but says why, runs the steps into ``results/reproduce/<run-id>/``, renders ``claims.md`` there from
those runs alone, and compares claim by claim with the published ledger: the same verdict, and our value
within the claim's own tolerance (F1 within the tie, resources and timings within the factor).
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from chimera.book import claims as C
from chimera.book.remake import expected as scaled_time
from chimera.report import fmt
from chimera.book.scope import published_book, run_set
from chimera.report.book import Blocks, Book
from chimera.report.runs import Run, RunSet, on_dataset, on_target
from chimera.errors import ChimeraError, ResultsError
from chimera.formats.rundir import RunDir, git_state
from chimera.targets.base import Capability
from chimera.targets.registry import environment, with_capability
from chimera.report.provenance import ROOT
from chimera.report.sections import section
from chimera.targets.registry import TRUTH

BLOCKS = Blocks()

log = logging.getLogger(__name__)


class Reproduction(BaseModel):
    """The manifest section of a reproduction (the book's `reproduce` block reads it)."""
    model_config = ConfigDict(extra="allow")
    quick: bool
    expected_min: float
    took_min: float
    agree: int
    compared: int
    testable_agree: int | None = None  # of the claims with a verdict (reproduced or not) in the published ledger
    testable: int | None = None
    left_out: dict[str, float] = Field(default_factory=dict)  # --quick: each step left out, its expected minutes
    resumed_from: str | None = None   # --resume: the stopped reproduction whose finished steps this one kept
    reused: dict[str, float] = Field(default_factory=dict)  # those steps, each with its own wall time (minutes)
    bound_min: float | None = None    # the limit announced up front (older records: none announced)
    steps: dict[str, str] = Field(default_factory=dict)
    failed: dict[str, str] = Field(default_factory=dict)

    @property
    def within(self) -> bool:
        """Finished within the limit it announced before it started."""
        return self.bound_min is not None and self.took_min <= self.bound_min


@dataclass(frozen=True)
class Step:
    experiment: str
    where: Literal["testbed", "testbed-or-truth", "truth"]   # what may run it: a testbed, the truth (TRUTH), or either
    quick: bool                   # part of --quick

    @property
    def targets(self) -> tuple[str, ...]:
        """In order of preference (the first that can run here is used): the testbeds in registry order, then
        the reference where it may stand in."""
        testbeds = tuple(c.name for c in with_capability(Capability.TESTBED))
        return {"testbed": testbeds, "testbed-or-truth": (*testbeds, TRUTH), "truth": (TRUTH,)}[self.where]


#: what the ledger reads; --quick leaves out the steps of Table 1, Table 2, Table 5 and the window figure (accuracy,
#: resources, hyper_cadence_slow, input_scale: the plan says what each would add), not the longest steps as such
STEPS = (Step("ablation", "testbed-or-truth", True),
         Step("hyper_dim", "truth", True),
         Step("hyper_cadence", "truth", True),
         Step("hyper_cadence_slow", "testbed-or-truth", False),
         Step("roc", "truth", True),
         Step("stability24h", "testbed-or-truth", True),
         Step("throughput", "testbed", True),
         Step("latency", "testbed", True),
         Step("accuracy", "truth", False),
         Step("resources", "truth", False),
         Step("input_scale", "truth", False))


@dataclass
class Planned:
    step: Step
    target: str | None
    why: str
    expected_min: float


def plan(quick: bool, published: RunSet | None = None) -> list[Planned]:
    """Each step with the target it runs on here (or why none) and its expected minutes."""
    from chimera.targets.registry import target_class
    published = published or run_set()
    out = []
    for s in STEPS:
        if quick and not s.quick:
            continue
        target, why = None, []
        for t in s.targets:
            w = target_class(t).unavailable_reason()
            if w is None:
                target = t
                break
            why.append(f"{t}: {w}")
        own, there = on_dataset(None), on_target(target or "")
        ref = (published.latest(s.experiment, lambda r: own(r) and there(r))
               or published.latest(s.experiment, own))
        est = scaled_time(ref).minutes if ref is not None else math.nan
        out.append(Planned(s, target, "; ".join(why) if target is None else "", est))
    return out


#: the announced limit: the expected time (the sum of each step's published wall time) times this; a step's wall
#: time moves with the machine's load and the data cache, so the sum alone is no limit a run can promise
BOUND = 1.5


def left_out(quick: bool, published: RunSet | None = None) -> dict[str, float]:
    """The steps --quick leaves out, each with the minutes it would add (its newest published run's)."""
    if not quick:
        return {}
    full = {p.step.experiment: p.expected_min for p in plan(False, published)}
    return {e: m for e, m in full.items() if e not in {p.step.experiment for p in plan(True, published)}}


def announce(steps: list[Planned], skipped: dict[str, float] | None = None) -> float:
    total = sum(p.expected_min for p in steps if p.target is not None and not math.isnan(p.expected_min))
    log.info("reproduce: %d steps, expected %.0f min, at most %.0f min on a 2-core machine (each step from its "
             "newest published run; the limit is %.1fx that):", sum(p.target is not None for p in steps), total,
             total * BOUND, BOUND)
    for p in steps:
        if p.target is None:
            log.info("  %-14s skipped here: %s", p.step.experiment, p.why)
        else:
            log.info("  %-14s on %-9s ~%.1f min", p.step.experiment, p.target, p.expected_min)
    for e, m in (skipped or {}).items():
        log.info("  %-14s left out by --quick (it would add ~%.1f min; Table 1, Table 2, Table 5 and the window figure "
                 "then keep the published runs' verdicts)", e, m)
    return total


def within(c: C.Claim, published: float | None, mine: float | None) -> bool | None:
    """Whether this machine's value is the published one within the claim's own tolerance (an F1 within the
    tie, a resource or timing within the factor); None where either has no value."""
    if published is None or mine is None:
        return None
    if "F1" in c.claim or c.table in ("Table 1", "Table 5"):
        return abs(published - mine) <= float(C.TIE)
    if published > 0 and mine > 0:
        return 1 / C.FACTOR <= mine / published <= C.FACTOR
    return published == mine


def compare(published: Book, mine: Book) -> pd.DataFrame:
    """Claim by claim: the published verdict and value, this machine's, and whether they agree."""
    rows = []
    pub = {(t, c.claim): c for t, cs in C.ledger(published) for c in cs}
    for title, cs in C.ledger(mine):
        for c in cs:
            p = pub.get((title, c.claim))
            if p is None or c.ours == "—":
                continue
            same_value = within(c, p.value, c.value)
            rows.append({"section": title, "claim": c.claim, "testable": p.kind in C.VERDICTS,
                         "published": p.ours, "published_verdict": p.kind,
                         "this_machine": c.ours, "this_machine_verdict": c.kind, "same_verdict": p.kind == c.kind,
                         "value_within_tolerance": same_value,
                         "reproduced_here": p.kind == c.kind and same_value is not False})
    return pd.DataFrame(rows)


def reusable(stopped: Path, steps: list[Planned]) -> dict[str, Run]:
    """The steps a stopped reproduction (its ``.partial`` or ``.failed`` folder) finished, on the target the plan
    picks now, whose code has not moved on since (each run's own scope, as the book judges a published run): a
    resumed reproduction keeps those and runs the others. A step run whose code changed is run again."""
    if not (stopped / "manifest.json").is_file():
        raise ResultsError(f"{stopped} is not a reproduction's folder (no manifest.json)",
                           "pass the results/reproduce/.<run-id>.partial or results/reproduce/.failed/<run-id> "
                           "folder a stopped `invoke reproduce` left")
    found = run_set(stopped / "runs", ROOT) if (stopped / "runs").is_dir() else None
    out: dict[str, Run] = {}
    for p in steps:
        r = found.latest(p.step.experiment, on_target(p.target)) if found is not None and p.target else None
        if r is None:
            continue
        if r.freshness.fresh:
            out[p.step.experiment] = r
        else:
            log.info("reproduce: %s's finished run in %s is stale (%s): it runs again", p.step.experiment, stopped,
                     r.freshness.mark().strip(" *[]"))
    return out


def reproduce(quick: bool = False, results_root: Path = ROOT / "results", data_root: Path = Path("data"),
              dry_run: bool = False, resume: Path | None = None) -> Path | None:
    """Run the plan into ``results/reproduce/<run-id>/runs/`` (a run directory with a manifest, publishable like
    a night), render its ledger, compare; returns the finished directory. ``resume``: a stopped reproduction
    whose finished, still-fresh steps are moved into this one instead of being run again (a full reproduction
    is longer than a working session; its time is then the sum of every step's own)."""
    from chimera.book.resume import run_resuming
    from chimera.experiments.load import load_experiment
    steps = plan(quick)
    skipped = left_out(quick)
    expected = announce(steps, skipped)
    kept = reusable(resume, steps) if resume is not None else {}
    for e, r in kept.items():
        log.info("  %-14s kept from %s (%s, %.1f min)", e, resume, r.path.name, r.minutes())
    if dry_run:
        return None
    t0 = time.monotonic()
    failed = {}
    with RunDir(results_root, "reproduce", "quick" if quick else "full") as run:
        run.manifest.record(kind="reproduce", git=git_state(ROOT), environment=environment())
        runs = run.path / "runs"
        for p in steps:
            if p.target is None:
                continue
            if p.step.experiment in kept:
                r = kept[p.step.experiment]
                (runs / r.path.parent.name).mkdir(parents=True, exist_ok=True)
                os.replace(r.path, runs / r.path.parent.name / r.path.name)
                continue
            log.info("reproduce: %s on %s (expected ~%.1f min; %.1f min elapsed)", p.step.experiment, p.target,
                     p.expected_min, (time.monotonic() - t0) / 60)
            try:
                # a step the stopped reproduction left part-way resumes at its finished units
                run_resuming(load_experiment(p.step.experiment), p.target, resume / "runs" if resume else runs,
                             runs, experiment_file=p.step.experiment, data_root=data_root)
            except ChimeraError as e:
                failed[p.step.experiment] = str(e)
                log.error("reproduce: %s failed: %s", p.step.experiment, e)
        reused = {e: r.minutes() for e, r in kept.items()}
        took = (time.monotonic() - t0) / 60 + sum(reused.values())
        mine = Book(run_set(runs, ROOT), ROOT)
        (run.path / "claims.md").write_text("# The paper's claims, as this machine measured them\n\n" + C.render(mine)
                                            + "\n")
        cmp = compare(published_book(ROOT), mine)
        cmp.to_csv(run.path / "comparison.csv", index=False)
        here = int(cmp["reproduced_here"].sum()) if len(cmp) else 0
        tested = cmp[cmp["testable"]] if len(cmp) else cmp
        record = Reproduction(quick=quick, expected_min=expected, bound_min=expected * BOUND, took_min=took,
                              agree=here, compared=len(cmp), testable=len(tested), left_out=skipped,
                              testable_agree=int(tested["reproduced_here"].sum()) if len(tested) else 0,
                              steps={p.step.experiment: p.target or f"skipped: {p.why}" for p in steps},
                              failed=failed, resumed_from=str(resume) if resume is not None else None,
                              reused=reused)
        run.manifest.put("reproduce", record)
        kept_note = (f"; resumed from {resume}, keeping {len(reused)} finished steps (their own "
                     f"{sum(reused.values()):.1f} min are in that time)" if resume else "")
        lines = [f"# Reproduction {run.run_id}", "", f"Expected {expected:.0f} min, announced at most "
                 f"{expected * BOUND:.0f} min, took {took:.1f} min ({'within' if record.within else 'OVER'} the "
                 f"announced limit){kept_note}.", "",
                 f"Of the {record.testable} claims with a verdict in the published ledger (reproduced or not), "
                 f"{record.testable_agree} agree here (same verdict, value within the claim's tolerance); of all "
                 f"{len(cmp)} rows measured here (not informative and not testable included, which agree by "
                 f"construction), {here}.", ""]
        if skipped:
            lines += ["Left out by --quick (expected minutes each would add): " +
                      "; ".join(f"{e} ~{m:.0f} min" for e, m in skipped.items()), ""]
        if failed:
            lines += ["Steps that failed: " + "; ".join(f"{k}: {v}" for k, v in failed.items()), ""]
        if len(cmp):
            lines.append(cmp.to_markdown(index=False))
        (run.path / "summary.md").write_text("\n".join(lines) + "\n")
    for _, r in cmp.iterrows():
        log.info("  %-9s %-60.60s published: %-16s here: %-16s %s", r["section"][:9], r["claim"],
                 r["published_verdict"], r["this_machine_verdict"], "agrees" if r["reproduced_here"] else "DIFFERS")
    log.info("reproduce: %d of %d claims agree with the published ledger; took %.1f min (expected %.0f); %s",
             here, len(cmp), took, expected, run.final / "summary.md")
    return run.final


@BLOCKS("reproduce")
def reproduction(b: Book) -> str:
    """The newest published reproduction: announced against taken time, and how many claims agreed."""
    r = b.runs.latest("reproduce")
    rec = section(r.manifest, "reproduce", Reproduction) if r is not None else None
    if r is None or rec is None:
        return "No reproduction is published yet."
    differ = pd.read_csv(r.path / "comparison.csv") if (r.path / "comparison.csv").is_file() else pd.DataFrame()
    bad = differ[~differ["reproduced_here"].astype(bool)] if len(differ) else differ
    return (f"The newest published reproduction ({r.cite()}, `invoke reproduce{' --quick' if rec.quick else ''}` "
            f"on a fresh clone of `{(r.manifest.git.commit or '')[:7]}` on this project's 2-core machine): expected "
            f"{rec.expected_min:.0f} min, announced at most " +
            (f"{rec.bound_min:.0f} min" if rec.bound_min is not None else "nothing") +
            f", took {rec.took_min:.1f} min ({'within' if rec.within else 'not within'} the announced limit" +
            (f"; resumed, {len(rec.reused)} of its steps made by the stopped sitting it resumed"
             if rec.resumed_from else "") + "); " +
            (f"{rec.testable_agree} of the {rec.testable} claims with a verdict agree with the published ledger "
             f"({rec.agree} of {rec.compared} rows with those not testable or not informative, which agree by "
             "construction)" if rec.testable is not None else
             f"{rec.agree} of {rec.compared} claims agree with the published ledger (not separating those not "
             "testable, which agree by construction)") +
            (". Left out by --quick: " + fmt.words([f"{e} (~{m:.0f} min)" for e, m in rec.left_out.items()])
             if rec.left_out else "") +
            (". Those that differ: " + fmt.words([f"{x['claim'].split(':')[0]} ({x['published_verdict']} -> "
                                                  f"{x['this_machine_verdict']}, {x['this_machine']})"
                                                  for _, x in bad.iterrows()]) if len(bad) else "") +
            (f". Steps that failed: {fmt.words(list(rec.failed))}" if rec.failed else "") + ".")
