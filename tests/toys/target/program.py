"""The toy switch's program: the reference's integer pipeline, the verdict marked as a trace-clock switch marks it.

``invoke mutate --files toy`` mutates the lines between ``def classify`` and the end marker.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chimera.controlplane.offline import run_controlled
from chimera.formats.verdict import VerdictFlag
from chimera.reference.pipeline import run_reference


def classify(art: Any, table: Any, control: Any) -> Any:
    got, state = run_reference(art, table) if control is None else run_controlled(art, table, control)
    got.flags = got.flags | np.uint8(VerdictFlag.TRACE_CLOCK)
    return got, state
# end of the program
