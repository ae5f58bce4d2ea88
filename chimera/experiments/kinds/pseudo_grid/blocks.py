"""The pseudo_grid kind's book blocks: the pseudo-label loop's gate and churn cap, chosen on validation days."""

from __future__ import annotations

import pandas as pd

from chimera.experiments.kinds.pseudo_grid.config import PseudoGridSection, default_cell
from chimera.experiments.kinds.pseudo_grid.render import cell_words, choice_lines
from chimera.experiments.kinds.pseudo_grid.tables import GRID, UNITS
from chimera.experiments.kinds.stability.blocks import SAME_ON_BOTH, difference_words, switch_check
from chimera.experiments.kinds.stability.tables import STABILITY_SEEDS
from chimera.report import fmt
from chimera.report.book import Blocks, Book
from chimera.report.runs import Run

BLOCKS = Blocks()

#: the experiments of the two roles, and the stability day whose own rows the held-out run's default cell replays
VALIDATION, HELD_OUT, DAY = "pseudo_validation", "pseudo_heldout", "stability_pseudo"


def same_rows(units: pd.DataFrame, day: pd.DataFrame) -> tuple[int, int]:
    """(rows of the held-out run's controls and default cell equal to the day's own run, rows compared), by the
    drift section's row check (``switch_check``: every ``SAME_ON_BOTH`` column, exactly): the default cell is the
    stability day's loop, so its rows must be the day's own, bit for bit."""
    q, c = default_cell()
    mine = units[units["gate_quantile"].isna() | ((units["gate_quantile"] == q) & (units["max_entries"] == c))]
    equal, compared, _ = switch_check(day, mine)
    return equal, compared


def cpu_words(r: Run) -> str | None:
    """The CPU a run was made on and the float pins it ran under, from its manifest (None: a run made before the
    record existed)."""
    c = r.manifest.environment.get("cpu")
    if not isinstance(c, dict):
        return None
    isa = [str(f) for f in c.get("isa") or []]
    pin = c.get("pinned")
    pinned = "unpinned" if pin in (None, "native") else f"pinned to {str(pin).upper()}"
    return f"{c.get('model') or 'an unnamed CPU'} ({', '.join(isa) or 'no vector flags read'}; {pinned})"


def _machines(h: Run, d: Run) -> str:
    """Which CPUs the two runs of the row check were made on: where they differ, the check is across machines."""
    hc, dc = cpu_words(h), cpu_words(d)
    if hc is None or dc is None:
        return " (one of the two runs records no CPU)"
    return f" (both made on {hc})" if hc == dc else f" (the held-out run made on {hc}; the day's run on {dc})"


def _key(r: pd.Series) -> tuple[str, float, int]:
    return str(r["arm"]), float(r["gate_quantile"]), int(r["max_entries"])


def _days(r: Run) -> str:
    sec = r.manifest.get("stability", PseudoGridSection) or PseudoGridSection()
    return (f"day realizations {', '.join(map(str, sec.days))}, training seeds {', '.join(map(str, sec.seeds))}; "
            f"{r.target}, {r.cite()}")


@BLOCKS("pseudo-grid")
def pseudo_grid(b: Book) -> str:
    """The validation grid and its choice per arm; where a choice is not the default, its held-out run."""
    v = b.runs.latest(VALIDATION)
    if v is None:
        return (f"No validation run of the gate and cap is published yet: `invoke run-experiment --name {VALIDATION} "
                "--target reference`, then `invoke publish`.")
    g = v.table(GRID)
    qs, caps = sorted(set(g["gate_quantile"])), sorted(set(g["max_entries"]))
    out = [f"The grid: gates {', '.join(f'{q:g}' for q in qs)} × caps {', '.join(str(int(c)) for c in caps)}, "
           f"each arm paired with its control per day, seed and time bin on validation days ({_days(v)}); "
           "intervals are 95% t-intervals over the days' means."]
    out.append("\n".join(choice_lines(g, "validation")))
    moved = g[g["chosen"] & ~g["default"].astype(bool)]
    if moved.empty:
        out.append("Validation keeps the default cell for every arm: the stability days' Pseudo-Label and "
                   "Chimera+Pseudo rows are the loop as chosen.")
        return "\n\n".join(out)
    h = b.runs.latest(HELD_OUT)
    if h is None:
        return "\n\n".join([*out, f"Validation moves {fmt.words(list(moved['arm']))} off the default; no held-out run "
                          f"of the chosen cells is published yet: `invoke run-experiment --name {HELD_OUT} "
                          "--target reference`, then `invoke publish`."])
    hg = h.table(GRID)
    chosen, ran = {_key(r) for _, r in moved.iterrows()}, {_key(r) for _, r in hg.iterrows()}
    missing = [f"{r['arm']} at {cell_words(r)}" for _, r in moved.iterrows() if _key(r) not in ran]
    if missing:
        out.append(f"The held-out run ({h.cite()}) does not run what validation chose ({fmt.words(missing)}): "
                   f"set its cells to the default and the choice, and run {HELD_OUT} again.")
        return "\n\n".join(out)
    same = ""
    d = b.runs.latest(DAY)
    if d is not None and h.has_csv(UNITS.name):
        eq, n = same_rows(h.table(UNITS), d.table(STABILITY_SEEDS))
        same = (f" The held-out run's controls and default cell replay the day's own rows: {eq} of {n} "
                f"(configuration, day, seed) rows equal to {d.cite()} in {', '.join(SAME_ON_BOTH)}"
                f"{_machines(h, d)}.")
    out.append(f"On the held-out days ({_days(h)}), nothing chosen on them.{same}")
    items = []
    for _, r in hg.iterrows():
        tag = "default" if bool(r["default"]) else "chosen on validation" if _key(r) in chosen else "another cell"
        items.append(f"- {cell_words(r)} ({tag}): "
                     f"{difference_words(str(r['arm']), str(r['control']), r['diff'], r['lo'], r['hi'])}; "
                     f"{fmt.n(int(r['churn_total']))} table entries changed over "
                     f"{fmt.n(int(r['installs']))} installs.")
    return "\n\n".join([*out, "\n".join(items)])


@BLOCKS("floats-machines")
def floats_machines(b: Book) -> str:
    """The pins' evidence across machines: the held-out run's default cell replays the stability day's own rows,
    so two such runs made on different CPUs must agree bit for bit where the pins hold."""
    h, d = b.runs.latest(HELD_OUT), b.runs.latest(DAY)
    if h is None or d is None or not h.has_csv(UNITS.name):
        return (f"No pair of {HELD_OUT} and {DAY} runs is published: the check of the pins across machines has not "
                "run.")
    eq, n = same_rows(h.table(UNITS), d.table(STABILITY_SEEDS))
    hc, dc = cpu_words(h), cpu_words(d)
    where = (f"{h.cite()} was made on {hc}, {d.cite()} on {dc}" if hc and dc and hc != dc else
             f"{h.cite()} and {d.cite()} were made on one kind of CPU ({hc or 'not recorded'}): this pair checks "
             "the pins on that CPU only, not across machines")
    return (f"The pins across machines: {where}. Of the {fmt.n(n)} (configuration, day, seed) rows the held-out "
            f"run's default cell shares with the day's run, {fmt.n(eq)} are equal in {', '.join(SAME_ON_BOTH)}.")
