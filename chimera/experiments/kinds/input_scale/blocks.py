"""The input_scale kind's book blocks: the input-scale (window) table."""

from __future__ import annotations

from chimera.experiments.kinds.input_scale.tables import INPUT_SCALE
from chimera.report import fmt
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, n

BLOCKS = Blocks()


@BLOCKS("input-scale")
def input_scale(b: Book) -> str:
    r = b.runs.need("input_scale")
    d = r.table(INPUT_SCALE)
    ch = d[d["method"] == "Chimera"].sort_values("window")
    others = d[d["method"] != "Chimera"]
    best = others.loc[others.groupby("window")["f1"].idxmax()].sort_values("window")
    peak = ch.loc[ch["f1"].idxmax()]
    return (f"The window sweep on the ciciot profile, every method under the same budget ({r.cite()}): Chimera "
            f"scores {fmt.words([f(x) for x in ch['f1']])} at L = {fmt.words([str(int(w)) for w in ch['window']])} "
            f"(per-flow state {n(ch['per_flow_bits'].min())} to {n(ch['per_flow_bits'].max())} bits: "
            f"{fmt.words(sorted(set(ch['per_flow_source'].astype(str))))}); the best other method at each window: " +
            fmt.words([f"{m} {f(x)}" for m, x in zip(best['method'], best['f1'])]) +
            f". Chimera peaks at L = {int(peak['window'])} ({f(peak['f1'])}).")
