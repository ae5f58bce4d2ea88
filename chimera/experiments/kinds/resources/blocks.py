"""The resources kind's book blocks: the per-flow bits and table entries."""

from __future__ import annotations

from chimera.experiments.kinds.resources.tables import RESOURCES
from chimera.report import fmt
from chimera.report.book import Blocks, Book
from chimera.report.fmt import f, n

BLOCKS = Blocks()


@BLOCKS("resources")
def resources(b: Book) -> str:
    r = b.runs.need("resources")
    d = r.table(RESOURCES)
    ch = d[d["method"] == "Chimera"]
    return (f"State as allocated ({r.cite()}): the same Chimera model takes " +
            fmt.words([f"{n(x['per_flow_bits'])} bits per flow in the {x['where']} (budget ratio "
                       f"{f(x['budget_ratio'])} of {n(x['budget_bits'])} bits)" for _, x in ch.iterrows()]) + ".")
