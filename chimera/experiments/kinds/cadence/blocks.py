"""The cadence kind's book blocks: the two-timescale cadence sweep."""

from __future__ import annotations

from chimera.experiments.kinds.cadence.tables import CADENCE
from chimera.report import fmt
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, signed

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
