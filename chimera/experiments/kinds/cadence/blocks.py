"""The cadence kind's book blocks: the two-timescale cadence sweep."""

from __future__ import annotations

from chimera.experiments.kinds.cadence.tables import CADENCE
from chimera.report import fmt
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, signed
from chimera.report.runs import on_testbed

BLOCKS = Blocks()


@BLOCKS("cadence")
def cadence(b: Book) -> str:
    r = b.runs.need("hyper_cadence")
    d = r.table(CADENCE)
    labels = d["label"].value_counts().to_dict()
    vs = ""
    if "diff_vs_static_map_lo" in d:
        up, down = int((d["diff_vs_static_map_lo"] > 0).sum()), int((d["diff_vs_static_map_hi"] < 0).sum())
        vs = (f" Against Static-Map of the same seed ({int(d['seeds'].max())} training seeds, intervals over seeds "
              f"and blocks of bins): {up} of {len(d)} cells above it, {down} below, {len(d) - up - down} no "
              f"difference shown; the differences run from {signed(d['diff_vs_static_map'].min())} to "
              f"{signed(d['diff_vs_static_map'].max())}.")
    return (f"The cadence grid, {d['eta'].nunique()} values of eta x {d['t_cp_s'].nunique()} of T_cp on the same "
            f"day ({r.cite()}): stability labels " + fmt.words([f"{v} {k}" for k, v in labels.items()]) +
            f"; mean F1 after training between {f(d['f1_mean'].min())} and {f(d['f1_mean'].max())}.{vs} The install "
            "time in the paper's condition is the configured one (simulated) on the reference.")


@BLOCKS("cadence_paper")
def cadence_paper(b: Book) -> str:
    """The paper's Table 5 loop (hyper_cadence_slow): each of its rows as we ran it, installs live on a dataplane."""
    r = b.runs.latest("hyper_cadence_slow")
    if r is None:
        return ("No run of the paper's loop is published yet: `invoke run-experiment --name hyper_cadence_slow`, "
                "then `invoke publish`.")
    d = r.table(CADENCE)
    switch = on_testbed(r)
    simulated = bool(d["install_simulated"].all())
    head = ["eta", "memory (epochs)", "T_cp (s)", "F1 after training [95%]", "− Static-Map [95%]", "installs / day",
            "churn / install", "Δt_install p50 (ms)"]
    rows = [[f"{x['eta']:g}", f"{x['memory_epochs']:.3g}", f"{x['t_cp_s']:g}",
             f"{f(x['f1_mean'])} {fmt.interval(x['f1_mean_lo'], x['f1_mean_hi'])}",
             f"{signed(x['diff_vs_static_map'])} "
             f"{fmt.interval(x['diff_vs_static_map_lo'], x['diff_vs_static_map_hi'])}",
             f"{x['installs'] / max(1, int(x['seeds'])):.1f}", f"{x['churn_per_install']:.1f}",
             f"{x['install_p50_ms']:.1f}" + (" (configured)" if simulated else "")] for _, x in d.iterrows()]
    how = ("every install written into the switch tables between two segments of the replay, its effect placed at "
           "the configured Δt_install on the trace clock so that the reference follows it" if switch and simulated
           else "every install written live into the switch" if switch else "installs simulated")
    checked = ""
    if {"replayed", "lost", "reference_mismatches", "register_mismatches"} <= set(d.columns):
        checked = (f" Over every cell and seed: {fmt.n(int(d['replayed'].sum()))} frames replayed, "
                   f"{fmt.n(int(d['lost'].sum()))} lost, {fmt.n(int(d['reference_mismatches'].sum()))} verdicts and "
                   f"{fmt.n(int(d['register_mismatches'].sum()))} registers different from the reference.")
    return (f"The paper's loop (an EMA centroid update at rate eta, its memory 1/eta epochs, every T_cp) at the "
            f"paper's {len(d)} rows, {int(d['seeds'].max())} training seeds each, on {r.target} ({how}) "
            f"({r.cite()}).{checked} Intervals over seeds and blocks of time bins; Table 5's verdicts in "
            "[claims.md](claims.md) compare each row with the operating point (eta 0.1, T_cp 60 s).\n\n"
            + fmt.table(head, rows))
