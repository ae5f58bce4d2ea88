"""The toy switch's program: one frame through the reference's integer pipeline, on the switch's state.

The toy switch's daemon (``switchd.py``) calls ``classify`` for every frame it receives, in arrival order, with
the state it keeps across frames, and marks the frame with the verdict. ``invoke mutate --files toy`` mutates the
lines between ``def classify`` and the end marker.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chimera.formats.verdict import VerdictFlag
from chimera.reference.pipeline import _pipeline, packets_of


def classify(loaded: Any, row: Any, ts_ns: int) -> tuple[int, int, int, int, int]:
    """(flags, label, rule_id, score, centroid) of one frame (``row``: a one-row PacketTable) at ``ts_ns``."""
    out = loaded.scratch()
    p = packets_of(row, np.array([ts_ns], np.int64))
    _pipeline(p, loaded.tables, loaded.params, loaded.state.regs, out)
    flags = int(out.flags[0]) if p.parsed[0] else int(VerdictFlag.UNPARSED)
    return flags, int(out.label[0]), int(out.rule_id[0]), int(out.score[0]), int(out.centroid[0])
# end of the program
