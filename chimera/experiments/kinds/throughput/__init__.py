"""The throughput kind (the paper's throughput figure): packets/s and Gbps through s1, with loss shown.

For each frame size (fixed 64/512/1500-byte frames made from the test packets, and the dataset's own size
mix) the frames are replayed at top speed through three paths on the same testbed: the Chimera pipeline
(conformance checked on every delivered frame), bare forwarding (s1 only redirects; eBPF), and the
software classifier host (†). Delivered rate = frames captured at h2 over the capture's span. Loss is
split as the harness always does: not sent (tcpreplay), dropped by h2's capture (kernel count), lost
(unexplained). Then a ladder of fixed rates finds the highest rate at which the Chimera path loses 0
packets unexplained (the number a peer testbed's 100 pps pacing is compared with).
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.throughput import config, render, run
from chimera.experiments.kinds.throughput import tables as T

KIND = Kind("throughput", "delivered pps/Gbps per frame size, Chimera vs bare forwarding vs the software host",
            config.ThroughputExperiment, run.run, render.render, (T.THROUGHPUT, T.LADDER), default_clock="switch",
            clocks=("switch",), needs_testbed=True,
            section_model=config.ThroughputSection)
