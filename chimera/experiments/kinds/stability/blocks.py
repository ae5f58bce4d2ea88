"""The stability kind's book blocks: the drifting days, their intervals and verdicts."""

from __future__ import annotations

import pandas as pd

from chimera.errors import ResultsError
from chimera.experiments.kinds.stability.tables import DIAGNOSIS, DIFFERENCES, DRIFT, STABILITY, STABILITY_SEEDS
from chimera.report import fmt
from chimera.report.archive import SWITCH_SUFFIX
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, n, signed
from chimera.report.runs import Run, on_dataset, on_testbed

BLOCKS = Blocks()


@BLOCKS("stability")
def stability(b: Book) -> str:
    """What the current code measures on the drifting day (the freshest run, a night's included), and the
    newest testbed run's conformance beside it."""
    r = b.runs.freshest("stability24h", on_dataset(None))
    if r is None:
        r = b.runs.need("stability24h")
    s = r.table(STABILITY).set_index("configuration")
    c = s.loc["Chimera"]
    k, d = _replays(c)
    size = (n(c['replayed'] / k / d) + " packets" if "replayed" in c and pd.notna(c["replayed"]) else
            n(c['new_flows']) + " flows")
    runs = f"{k} training seed{'s' * (k > 1)}" + (f" on each of {d} realizations of the day" if d > 1 else "")
    out = [f"The drifting day, uncompressed under the {r.manifest.clock} clock on the {r.target} target ({r.cite()}): "
           f"{size}{f', each configuration run with {runs}' if k * d > 1 else ''}. Mean F1 over the day"
           f"{' (the mean over seeds)' if k * d > 1 else ''}: " +
           fmt.words([f"{k} {f(v)}" for k, v in s["f1_mean"].items()]) +
           f"; first to last bin, Chimera {f(c['f1_first'])} to {f(c['f1_last'])}. The slow loop's own effect, "
           f"Chimera − Fast-Only: {signed(c['diff_vs_fast_only'])} ({_interval_words(r)} "
           f"{fmt.interval(c['diff_vs_fast_only_lo'], c['diff_vs_fast_only_hi'])}); both timescales together, "
           f"Chimera − Static-Map: {signed(c['diff_vs_static_map'])} "
           f"{fmt.interval(c['diff_vs_static_map_lo'], c['diff_vs_static_map_hi'])}. " + _verdict_slow(c)]
    tb = (b.runs.freshest("stability24h_switch", on_testbed) or
          b.runs.latest("stability24h", lambda x: on_testbed(x) and not x.manifest.dataset_override))
    if tb is not None and tb is not r:
        t = tb.table(STABILITY).set_index("configuration")
        tk, td = _replays(t.loc["Chimera"])
        out.append(f"The newest testbed run of the day ({tb.target}, {tb.cite()}): "
                   f"{n(t.loc['Chimera', 'replayed'] / tk / td)} packets per replay, {len(t) * tk * td} replays "
                   f"({len(t)} configurations x {tk} seed{'s' * (tk > 1)}{f' x {td} days' if td > 1 else ''}), "
                   f"{n(t['lost'].sum())} lost and {n(t['reference_mismatches'].sum())} verdicts different "
                   f"from the reference; its Chimera − Fast-Only {signed(t.loc['Chimera', 'diff_vs_fast_only'])}, "
                   f"Chimera − Static-Map {signed(t.loc['Chimera', 'diff_vs_static_map'])}.")
    elif on_testbed(r):
        out.append(f"{n(s['lost'].sum())} lost and {n(s['reference_mismatches'].sum())} verdicts different from "
                   "the reference.")
    return " ".join(out)


def _replays(c: pd.Series) -> tuple[int, int]:
    """(training seeds per day, days) of a pooled stability row: its ``seeds`` counts the rows it pools, one per
    seed and day."""
    rows = int(c["seeds"]) if "seeds" in c and pd.notna(c["seeds"]) else 1
    days = int(c["days"]) if "days" in c and pd.notna(c["days"]) else 1
    return max(1, rows // days), days


def _interval_words(r: Run) -> str:
    """How a stability run's intervals were made (seeds and blocks, or bins alone in older runs)."""
    if (r.path / DIFFERENCES.name).is_file():
        d = r.table(DIFFERENCES)
        k = int(d["seeds"].max()) if len(d) else 1
        blocks = sorted({float(x) for x in d["block_hours"]})
        chosen = "block_chosen" in d and bool(d["block_chosen"].all())
        days = int(d["days"].max()) if "days" in d and len(d) else 1
        if days > 1:  # the day is the unit (chimera.metrics.days): the blocks only picked the reported length
            return (f"95% t-interval over {days} generated days' means, each over {k // days} training seeds, "
                    "paired")
        return (f"95% interval over {k} training seed{'s' * (k > 1)} and "
                f"{'/'.join(f'{x:g}' for x in blocks)}-hour blocks of time bins"
                f"{' (chosen from each series by Politis and White’s rule)' if chosen else ''}, paired")
    return "95% interval paired by time bin"


def _drift_words(r: Run) -> str:
    if not (r.path / DRIFT.name).is_file():
        return ""
    d = r.table(DRIFT)
    st = r.view.config.get("stability") or {}
    last = d[d["t_mid_h"] >= float(st.get("day_hours", 24)) - float(st.get("last_hours", 6))]
    floor = d[d["in_training_hours"].astype(bool)]
    return ("drift in the last hours against the training hours (Jensen-Shannon, bits; the training hours' own "
            "bins in brackets): " + fmt.words([f"{k} {float(last[k].mean()):.3f} ({float(floor[k].mean()):.3f})"
                                               for k in ("covariate", "label", "concept")]))


def _pairs(r: Run, pairs: list[tuple[str, str]]) -> str:
    d = r.table(DIFFERENCES).set_index(["a", "b"])
    return fmt.words([f"{a} − {b} {signed(d.loc[(a, b), 'diff'])} {fmt.interval(d.loc[(a, b), 'lo'], d.loc[(a, b), 'hi'])}"
                      for a, b in pairs if (a, b) in d.index])


@BLOCKS("drift")
def drift(b: Book) -> str:
    """The adaptations on the two days: the drifting day (covariate, concept and label shift) and the day with
    label shift only; each with its drift decomposition and the paired differences the paper's claim turns on."""
    out = []
    pairs = [("Fast-Only", "Static-Map"), ("Re-cluster-Only", "Static-Map"), ("Paper-Loop", "Chimera"),
             ("Pseudo-Label", "Static-Map"), ("Prior-Only", "Static-Map"), ("Chimera+Prior", "Chimera"),
             ("Oracle", "Static-Map")]
    for exp, what in (("stability24h", "The drifting day"), ("stability_labelshift", "The day with label shift only")):
        r = b.runs.freshest(exp, on_dataset(None))
        if r is None or not (r.path / DIFFERENCES.name).is_file():  # older runs: the stability block cites them
            continue
        s = r.table(STABILITY).set_index("configuration")
        out.append(f"{what} ({r.target}, {r.cite()}; {_interval_words(r)}): {_drift_words(r)}. Mean F1 after the "
                   "training hours: " + fmt.words([f"{k} {f(v)}" for k, v in s["f1_mean"].items()]) +
                   f". Paired differences: {_pairs(r, pairs)}.")
    if not out:
        raise ResultsError("no stability run with paired differences (differences.csv) is published",
                           "run invoke run-experiment --name stability24h and --name stability_labelshift, then "
                           "invoke publish")
    return " ".join(out)


#: the days of the drift section: (experiment, what the day is, the drift it carries)
DAYS = (("stability24h", "the drifting day", "concept, covariate and label shift"),
        ("stability_labelshift", "the day with label shift only", "label shift"),
        ("stability_pseudo", "the drifting day with the pseudo-label loop", "concept, covariate and label shift"),
        ("stability_driftonly", "the day with size and timing drift only", "the drift knob alone; the class mix "
                                "fixed"),
        ("stability_covariate", "the day of covariate shift", "p(x) moved by a selection on x, p(y | x) kept"),
        ("stability_labelshift_large", "the day with large label swings", "label shift: x10, x0.1, classes "
                                       "appearing and disappearing"))


#: days of ``DAYS`` without a ``<day>_switch`` experiment, and why
NO_SWITCH_RUN = {"stability_pseudo": "stability24h's day: its switch run has the pseudo-label configurations"}
#: what a day's switch run and the day's reference run must agree on, per (configuration, day, training seed)
SAME_ON_BOTH = ("f1_mean", "f1_first", "f1_last", "f1_worst_bin", "installs", "churn_total")


def switch_check(day: pd.DataFrame, switch: pd.DataFrame) -> tuple[int, int, list[str]]:
    """How many of a switch run's per-seed rows (stability_seeds.csv: one per configuration, day and seed) equal
    the day's reference run's rows exactly in every column of ``SAME_ON_BOTH`` (trace clock: a verdict does not
    depend on the target), of how many it has; and the rows that differ or that the reference run lacks, named."""
    keys = [k for k in ("configuration", "day", "seed") if k in switch and k in day]
    named = [k for k in ("configuration", "day", "seed") if k in switch]
    b = day.set_index(keys)
    cols = [c for c in SAME_ON_BOTH if c in switch and c in b]

    def same(row: pd.Series) -> bool:
        """Equal to the one reference row of its key (a reference run of one day has no day column: several
        switch rows then share a key, and only the day whose numbers are the reference's is equal)."""
        k = tuple(row[c] for c in keys)
        key = k if len(k) > 1 else k[0]
        if key not in b.index:
            return False
        ref = b.loc[[key], cols]
        return len(ref) == 1 and all(row[c] == ref.iloc[0][c] or (pd.isna(row[c]) and pd.isna(ref.iloc[0][c]))
                                     for c in cols)
    differ = [" ".join(str(row[c]) for c in named) for _, row in switch.iterrows() if not same(row)]
    return len(switch) - len(differ), len(switch), differ


def cpu_of(r: Run) -> str | None:
    """The CPU model a run's manifest records (None: made before runs recorded it)."""
    cpu = r.manifest.environment.get("cpu")
    return str(cpu.get("model")) if isinstance(cpu, dict) and cpu.get("model") else None


def cpu_note(sw: Run, day: Run) -> str | None:
    """Where a switch run's rows differ from the day's reference run: the two CPUs, when they are not one model.
    Each run trains its own models (float training), and the switch's verdicts are checked against the reference
    on its own machine; the integer pipeline is the same on both."""
    a, b = cpu_of(sw), cpu_of(day)
    if a is None or b is None or a == b:
        return None
    return (f"made on two CPUs: the switch run on {a}, the reference run on {b}; each run trains its own models in "
            "floating point")


@BLOCKS("drift-switch")
def drift_switch(b: Book) -> str:
    """Each generated day on a switch: its ``<day>_switch`` run (every switch configuration, one training seed,
    the day's three realizations) with its losses and its verdict and register differences from the reference,
    and whether its F1 equals the day's reference run row for row, which is what lets the reference run's
    intervals stand for the switch's. A day without a switch run says so."""
    rows, missing = [], []
    for exp, what, _ in DAYS:
        if exp in NO_SWITCH_RUN:
            continue
        sw = b.runs.freshest(exp + SWITCH_SUFFIX, on_testbed)
        if sw is None:
            missing.append(f"`{exp}{SWITCH_SUFFIX}`")
            continue
        t = sw.table(STABILITY_SEEDS)
        per = sum(v for k, v in sw.manifest.timings_s.items() if k.startswith("target:")) / max(1, len(t))
        day = b.runs.freshest(exp, on_dataset(None))
        same, full = "no reference run of the day is published", ""
        if day is not None:
            ref = day.table(STABILITY_SEEDS)
            k, total, differ = switch_check(ref, t)
            same = (f"{k} of {total} equal to {day.cite()}" +
                    (f"; differ: {', '.join(differ[:6])}{' …' if len(differ) > 6 else ''}" if differ else "") +
                    (f" ({cpus})" if differ and (cpus := cpu_note(sw, day)) else ""))
            full = f"{per * int(ref['configuration'].isin(set(t['configuration'])).sum()) / 3600:.1f} h"
        rows.append([what, f"{sw.target} ({sw.cite()})", n(t["configuration"].nunique()),
                     n(t["day"].nunique() if "day" in t else 1), n(t["seed"].nunique()), n(len(t)),
                     n(t["replayed"].sum()), n(t["lost"].sum()), n(t["reference_mismatches"].sum()),
                     n(t["register_mismatches"].sum()), same, f"{per:.0f} s", full])
    out = []
    if rows:
        out.append("Each day on a switch, every configuration a switch runs, with the first held-out training seed "
                   "(the reference runs carry all ten: see the verdicts above). Every replayed frame's verdict and "
                   "registers are compared with the reference's. \"Rows equal to the reference run\" compares each "
                   f"(configuration, day) row's {', '.join(SAME_ON_BOTH)} with the same row of the day's reference "
                   "run, exactly. The last two columns: the switch's wall time per replay (the replay, its "
                   "installs, the capture's parsing and the frame-by-frame comparison), and what the day's reference "
                   "run, its seeds and days, would take on the switch at that rate:\n\n" +
                   fmt.table(["day", "switch run", "configurations", "days", "seeds", "replays", "packets", "lost",
                              "verdicts ≠ reference", "registers ≠ reference", "rows equal to the reference run",
                              "per replay", "the day's run on the switch"], rows))
    if missing:
        out.append(f"Not yet run on a switch: {fmt.words(missing)} "
                   f"(`invoke run-experiment --name <day>{SWITCH_SUFFIX}`).")
    return "\n\n".join(out)


def difference_words(a: str, b: str, diff: float, lo: float, hi: float) -> str:
    """One comparison in words no wider than its interval: measurably above or below where the interval excludes
    zero, else "no measurable difference"."""
    where = f"{signed(diff)} {fmt.interval(lo, hi)}"
    if lo > 0:
        return f"{a} measurably above {b} ({where})"
    if hi < 0:
        return f"{a} measurably below {b} ({where})"
    return f"no measurable difference between {a} and {b} ({where})"


@BLOCKS("drift-verdicts")
def drift_verdicts(b: Book) -> str:
    """The drift section's conclusions, one sentence per comparison and day, from each day's paired intervals
    (differences.csv): what a reader may say, and nothing wider. Each interval is a 95% one on its own; the
    comparisons of a day are reported as exploratory (no correction for multiplicity), which the text says."""
    out = []
    for exp, what, kind in DAYS:
        r = b.runs.freshest(exp, on_dataset(None))
        if r is None or not (r.path / DIFFERENCES.name).is_file():
            continue
        d = r.table(DIFFERENCES)
        lines = [f"- **{what[0].upper() + what[1:]}** ({kind}; {r.target}, {r.cite()}; {_interval_words(r)}; "
                 f"{len(d)} comparisons, each interval at 95% on its own: exploratory, not corrected for "
                 "multiplicity):"]
        lines += [f"  - {x['measures']}: {difference_words(x['a'], x['b'], x['diff'], x['lo'], x['hi'])}."
                  for _, x in d.iterrows()]
        if exp == "stability24h" and (r.path / DIAGNOSIS.name).is_file():
            g = r.table(DIAGNOSIS)
            lines.append("  - the diagnosis runs (the slow loop's parts switched off one at a time, on the reference, "
                         "the first training seed only: points without intervals, not verdicts), mean F1 after the "
                         "training hours: " + fmt.words([f"{x['slow_loop']} {f(x['f1_mean'])} ({n(x['installs'])} "
                                                         f"installs)" for _, x in g.iterrows()]) + ".")
        out.append("\n".join(lines))
    if not out:
        raise ResultsError("no stability run with paired differences (differences.csv) is published",
                           "run invoke run-experiment --name stability24h and --name stability_labelshift, then "
                           "invoke publish")
    return "\n".join(out)


def _verdict_slow(c: pd.Series) -> str:
    lo, hi = c["diff_vs_fast_only_lo"], c["diff_vs_fast_only_hi"]
    if hi < 0:
        return "The interval is below zero: on this day the slow loop measurably hurts."
    if lo > 0:
        return "The interval is above zero: on this day the slow loop measurably helps."
    return "The interval holds zero: no effect of the slow loop is measured on this day."
