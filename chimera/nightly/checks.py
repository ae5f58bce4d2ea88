"""Nightly checks: each compares one measured thing with the golden baseline, tonight's reference or this
machine's history, and says what it found.

Statuses (``STATUSES``); only ``regressed`` and ``failed-to-run`` fail the night:

- pass, improved, regressed: the number was measured and judged;
- failed-to-run: it should have been measured and was not (an error, a required target missing, a golden key
  absent tonight, a counter that was never read);
- allowed-skip: the suite (results/baseline/nightly.yaml) allows this target to be absent, and says why;
- no-verdict: a bench value on a machine with too little history of its own to judge it (never judged against
  another machine's numbers);
- reported: a number shown and never judged (the mutation score: a sample's score would fail by chance).

Kinds of check:

- exact: reference F1 bit-identical to the golden's when the code fingerprint is the golden's; a testbed run on
  the trace clock bit-identical to tonight's reference run of the same experiment; conformance counters 0.
- tolerance: F1 >= golden - 0.01 (improved above golden + 0.01).
- band: a bench value within median +- max(k * IQR, 10%) of this machine's history of *passing* nights.
- ran: the measurement ran (a fuzz or mutation run, an experiment).
- triage: the mutation sample against the triage file (docs/mutants.yaml).
- report: shown, never judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import pandas as pd

from chimera.report.runs import is_testbed
from chimera.nightly.golden import Golden
from chimera.report.sections import FuzzNight, MutateNight, NightMeasured
from chimera.targets.registry import TRUTH

F1_TOLERANCE = 0.01


def lower_is_better() -> frozenset[str]:
    """The bench metrics whose rise is the regression (each bench record says so)."""
    from chimera.bench import BENCHES
    return frozenset(b.metric for b in BENCHES.values() if b.lower_is_better)


BAND_K = 3.0
BAND_FLOOR = 0.10
MIN_HISTORY = 3


class Status(StrEnum):
    """What a check found (the module's docstring says when each applies); a string, so that a night's CSV and
    the dashboard read it as one."""

    REGRESSED = "regressed"
    FAILED_TO_RUN = "failed-to-run"
    IMPROVED = "improved"
    NO_VERDICT = "no-verdict"
    ALLOWED_SKIP = "allowed-skip"
    PASS = "pass"
    REPORTED = "reported"


class CheckKind(StrEnum):
    """How a check judges (the module's docstring)."""

    EXACT = "exact"
    TOLERANCE = "tolerance"
    BAND = "band"
    RAN = "ran"
    TRIAGE = "triage"
    REPORT = "report"


#: the statuses, in the order a page lists them (the failing ones first)
STATUSES: tuple[Status, ...] = tuple(Status)
FAILING = (Status.REGRESSED, Status.FAILED_TO_RUN)


@dataclass(frozen=True)
class RunKey:
    """A night's run: its experiment and the target it ran on (written ``experiment@target`` in the night's
    records)."""

    experiment: str
    target: str

    @staticmethod
    def parse(key: str) -> "RunKey":
        experiment, _, target = key.rpartition("@")
        return RunKey(experiment, target)

    def __str__(self) -> str:
        return f"{self.experiment}@{self.target}"


@dataclass
class Check:
    name: str
    kind: CheckKind
    status: Status
    value: Any = None
    expected: Any = None
    detail: str = ""

    def row(self) -> dict[str, Any]:  # CSV out: one row of checks.csv
        return asdict(self)


def failed(checks: list[Check]) -> bool:
    return any(c.status in FAILING for c in checks)


def on_testbed(target: str) -> bool:
    """A switch in the Mininet topology; an unknown name counts as one here: its counters are then required,
    so nothing unmeasured passes."""
    return is_testbed(target) is not False


#: whether a night's run (by its key) was made by the golden's code: None where it was, else why not
CodeChange = Callable[[str], str | None]


def experiment_checks(measured: NightMeasured, golden: Golden | None, changed: CodeChange) -> list[Check]:
    """``changed(key)``: None where the run's own code (its fingerprint, chimera.report.provenance) is the
    golden's, else why not; the bit-identical F1 checks are judged only where it is None."""
    out: list[Check] = []
    gold = golden.experiments if golden is not None else {}
    runs = measured.experiments
    for key, m in runs.items():
        if m.error:
            out.append(Check(f"{key}: ran", CheckKind.RAN, Status.FAILED_TO_RUN, detail=m.error[:300]))
            continue
        rk = RunKey.parse(key)
        testbed = on_testbed(rk.target)
        for what in ("reference_mismatches", "register_mismatches", "lost", "unaccounted"):
            vals = m.counter(what)
            if vals is None:
                if testbed and what != "unaccounted":
                    out.append(Check(f"{key}: {what} == 0", CheckKind.EXACT, Status.FAILED_TO_RUN, "unknown", 0,
                                     "the run's table has no such column: never measured"))
                continue
            unknown = sorted(v for v, x in vals.items() if x is None)
            bad = {v: x for v, x in vals.items() if x is not None and x != 0}
            status = Status.FAILED_TO_RUN if unknown else Status.REGRESSED if bad else Status.PASS
            detail = ", ".join([f"{v}: unknown (never read)" for v in unknown] + [f"{v}: {x}" for v, x in bad.items()])
            out.append(Check(f"{key}: {what} == 0", CheckKind.EXACT, status, "unknown" if unknown else (bad or 0), 0,
                             detail))
        gf1 = gold[key].f1 if key in gold else {}
        for variant in sorted(set(gf1) - set(m.f1)):
            out.append(Check(f"{key}/{variant}: present", CheckKind.EXACT, Status.FAILED_TO_RUN, None, gf1[variant],
                             "in the golden, absent tonight (a variant that disappeared)"))
        ref = runs.get(str(RunKey(rk.experiment, TRUTH))) if testbed else None
        for variant, f1 in m.f1.items():
            if testbed and m.clock == "trace":
                rf = ref.f1.get(variant) if ref is not None and not ref.error else None
                if rf is not None:
                    ok = f1 == rf
                    out.append(Check(f"{key}/{variant}: F1 == reference (trace clock)", CheckKind.EXACT,
                                     Status.PASS if ok else Status.REGRESSED, f1, rf,
                                     "" if ok else "on the trace clock the switch must give the reference's verdicts"))
            gf = gf1.get(variant)
            if gf is None:
                out.append(Check(f"{key}/{variant}: F1 vs golden", CheckKind.TOLERANCE, Status.NO_VERDICT, f1, None,
                                 "no golden value for this run (new experiment, variant or target)"))
                continue
            exact = not testbed or m.clock == "trace"
            if exact:
                why = changed(key)
                if why is None:
                    ok = f1 == gf
                    out.append(Check(f"{key}/{variant}: F1 bit-identical", CheckKind.EXACT,
                                     Status.PASS if ok else Status.REGRESSED, f1, gf,
                                     "" if ok else "same code, seed and data gave a different F1"))
                else:
                    out.append(Check(f"{key}/{variant}: F1 bit-identical", CheckKind.EXACT, Status.NO_VERDICT, f1, gf,
                                     why))
            status = (Status.REGRESSED if f1 < gf - F1_TOLERANCE else
                      Status.IMPROVED if f1 > gf + F1_TOLERANCE else Status.PASS)
            out.append(Check(f"{key}/{variant}: F1 >= golden - {F1_TOLERANCE}", CheckKind.TOLERANCE, status, f1, gf,
                             f"{f1 - gf:+.4f}"))
    for key in sorted(set(gold) | set(measured.skipped)):
        if key in runs:
            continue
        if key in measured.skipped:
            out.append(Check(f"{key}: ran", CheckKind.RAN, Status.ALLOWED_SKIP, detail=measured.skipped[key]))
        else:
            out.append(Check(f"{key}: ran", CheckKind.RAN, Status.FAILED_TO_RUN,
                             detail=measured.failed.get(key) or "in the golden, not run tonight"))
    for key, why in measured.failed.items():
        if key not in runs and key not in gold:
            out.append(Check(f"{key}: ran", CheckKind.RAN, Status.FAILED_TO_RUN, detail=why))
    return out


def band(metric: str, history: pd.DataFrame, host: str) -> tuple[float, float, str] | int:
    """(low, high, source) from this host's passing nights, or how many such nights there are (too few)."""
    h = history
    if "host" in h.columns and "night_status" in h.columns:
        past = h[(h["metric"] == metric) & (h["host"] == host) & (h["night_status"] == Status.PASS)]
    else:  # a history from before hosts and statuses were recorded: nothing in it is known to be this machine's
        past = h.iloc[0:0]
    vals = pd.to_numeric(past["value"], errors="coerce").dropna()
    if len(vals) < MIN_HISTORY:
        return len(vals)
    med = float(vals.median())
    iqr = float(np.subtract(*np.percentile(vals, [75, 25])))
    half = max(BAND_K * iqr, BAND_FLOOR * abs(med))
    return med - half, med + half, f"this machine's {len(vals)} passing nights"


def bench_checks(measured: NightMeasured, history: pd.DataFrame, golden: Golden | None, host: str) -> list[Check]:
    out = []
    for metric, st in measured.benches.items():
        if st.error or st.median is None:
            out.append(Check(f"bench {metric}", CheckKind.BAND, Status.FAILED_TO_RUN,
                             detail=(st.error or "no median")[:300]))
            continue
        v = float(st.median)
        b = band(metric, history, host)
        if isinstance(b, int):
            out.append(Check(f"bench {metric}", CheckKind.BAND, Status.NO_VERDICT, v, None,
                             f"{b} passing nights of this machine in the history (a band needs {MIN_HISTORY}); "
                             "bench numbers are machine-dependent: never judged against another machine's"))
            continue
        lo, hi, src = b
        worse, better = (v > hi, v < lo) if metric in lower_is_better() else (v < lo, v > hi)
        status = Status.REGRESSED if worse else Status.IMPROVED if better else Status.PASS
        out.append(Check(f"bench {metric}", CheckKind.BAND, status, v, f"[{lo:.4g}, {hi:.4g}]",
                         f"band from {src} (median +- max({BAND_K:g} IQR, {BAND_FLOOR:.0%}))"))
    for metric in sorted(set(golden.benches if golden else {}) - set(measured.benches)):
        out.append(Check(f"bench {metric}", CheckKind.BAND, Status.FAILED_TO_RUN,
                         detail="in the golden, not run tonight"))
    return out


def fuzz_checks(f: FuzzNight | None) -> list[Check]:
    """The night's fuzz budget: any difference between targets is a regression; coverage is reported."""
    if f is None:
        return []
    if f.error:
        return [Check("fuzz: ran", CheckKind.RAN, Status.FAILED_TO_RUN, detail=f.error[:300])]
    out = [Check(f"fuzz: {f.sequences} sequences, 0 differences", CheckKind.EXACT,
                 Status.REGRESSED if f.differences else Status.PASS, f.differences, 0,
                 "; ".join(f.failures[:3]) or f"seed {f.seed}, targets {f.targets}")]
    for t, why in f.skipped.items():
        out.append(Check(f"fuzz@{t}: ran", CheckKind.RAN, Status.ALLOWED_SKIP, detail=why))
    for t, why in f.failed.items():
        out.append(Check(f"fuzz@{t}: ran", CheckKind.RAN, Status.FAILED_TO_RUN, detail=why))
    return out


def mutate_checks(m: MutateNight | None) -> list[Check]:
    """The night's mutation sample, judged by the triage: a kill lost (a mutant docs/mutants.yaml records as
    killed survived) or a survivor untriaged past the suite's days regresses; the score over every mutant drawn so
    far is reported and never judged (a sampled score against a floor fails by chance)."""
    if m is None:
        return []
    out = [Check(f"mutation@{f}: ran", CheckKind.RAN, Status.ALLOWED_SKIP, detail=why) for f, why in m.skipped.items()]
    out += [Check(f"mutation@{f}: ran", CheckKind.RAN, Status.FAILED_TO_RUN, detail=why) for f, why in m.failed.items()]
    if m.error:
        return out + [Check("mutation: ran", CheckKind.RAN, Status.FAILED_TO_RUN, detail=m.error[:300])]
    if m.files and not m.findings:
        return out + [Check("mutation: judged", CheckKind.TRIAGE, Status.FAILED_TO_RUN,
                            detail="the run judged nothing")]
    for fd in m.findings:
        name = "mutation triage: none overdue" if fd.file == "triage" else f"mutation@{fd.file}: no kill lost"
        out.append(Check(name, CheckKind.TRIAGE, Status.REGRESSED if fd.regressed else Status.PASS, detail=fd.what))
    for f, c in m.cumulative.items():
        out.append(Check(f"mutation score {f}, every mutant drawn", CheckKind.REPORT, Status.REPORTED,
                         None if c.score is None or c.score != c.score else round(c.score, 4), None,
                         f"{c.killed} killed, {c.survived} survived, {c.equivalent} equivalent of {c.drawn} drawn "
                         f"(95% interval {_pct(c.lo)}-{_pct(c.hi)})"))
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None or x != x else f"{x:.0%}"


def summary_markdown(checks: list[Check], meta: dict[str, Any]) -> str:  # JSON in: the night's manifest metadata
    """A summary fit for a CI comment or an e-mail: the verdict, the counts, then every check grouped by status."""
    df = pd.DataFrame([c.row() for c in checks], columns=["name", "kind", "status", "value", "expected", "detail"])
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    verdict = "REGRESSED" if any(counts.get(s) for s in FAILING) else "PASS"
    lines = [f"# Nightly {meta.get('run_id')}: **{verdict}**", "",
             f"git `{meta.get('git')}`, code {meta.get('code')}, host {meta.get('host')}, float probe "
             f"{meta.get('float_probe')}; golden {meta.get('golden_git')} "
             f"(code {meta.get('golden_code')}); {len(df)} checks: " +
             ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s)), ""]
    if meta.get("interrupted"):
        lines += [f"**Interrupted** during {meta['interrupted']}: only the checks below ran; the history was not "
                  "appended.", ""]
    fmt = (lambda x: f"{x:.6g}" if isinstance(x, float) else x)  # noqa: E731
    for s in STATUSES:
        part = df[df["status"] == s]
        if not len(part):
            continue
        part = part.assign(value=part["value"].map(fmt), expected=part["expected"].map(fmt))
        lines += [f"## {s} ({len(part)})", "", part.drop(columns=["status"]).to_markdown(index=False), ""]
    return "\n".join(lines)
