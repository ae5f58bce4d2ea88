"""The registers a switch reports: one shape for every target, the reference and the fuzzer's oracle.

A switch's ``registers()`` returns its counters and the state that conformance compares with the reference
(centroid and class EMAs, the token sample ring, the clock, and with coverage the decision-point counters). The
slow loop reads the sample ring and the EMAs from it. A switch whose registers cannot be read returns an empty
one, and the reader reports "unknown", never 0. A ``TypedDict`` (not a class): the targets fill it from
Thrift text, eBPF maps or numpy state, and it goes into JSON as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypedDict

import numpy as np
import numpy.typing as npt

#: a register array as a target reads it: a list (Thrift text, eBPF maps) or the reference's numpy copy
IntArray = Sequence[int] | npt.NDArray[np.int64]


class Registers(TypedDict, total=False):
    """What a switch reports after (or during) a run; every key is absent when it could not be read."""

    counters: dict[str, int]     # the dataplane's counters by name (docs/pipeline.md)
    ema: IntArray                # per-centroid EMA of assignments (signed, EMA_BITS)
    class_ema: IntArray          # per-class EMA of verdicts (signed, EMA_BITS)
    sample: IntArray             # the token sample ring (sample words, docs/pipeline.md)
    sample_count: int            # samples taken since the ring was last cleared
    clock: int                   # the switch's clock register (ns)
    coverage: IntArray           # decision-point counters, where the build counts them


#: the state registers conformance compares with the reference (every key of ``Registers`` but the counters)
StateName = Literal["ema", "class_ema", "sample", "sample_count", "clock", "coverage"]
STATE_REGISTERS: tuple[StateName, ...] = ("ema", "class_ema", "sample", "sample_count", "clock", "coverage")
