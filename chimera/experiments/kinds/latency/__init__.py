"""The latency kind (the paper's latency figure): every packet's in-switch and host-to-host latency.

The experiment's first variant is trained and compiled once; the first ``max_packets`` test packets are
replayed at each offered load (``replay: pps``; inter-arrival features then follow the replay clock, and
the report says so) through the switch target and, with ``software: true``, through the software
classifier host (s1 redirects to ``sc``). Every packet's latency is kept (latency.csv.gz), with the
percentiles, loss and conformance per path and load (latency_summary.csv).
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind
from chimera.experiments.kinds.latency import config, render, run
from chimera.experiments.kinds.latency import tables as T

KIND = Kind("latency", "every packet's in-switch and host-to-host latency at offered loads", config.LatencyExperiment, run.run,
            render.render, (T.LATENCY, T.LATENCY_SUMMARY, T.LATENCY_COST), default_clock="switch", clocks=("switch",),
            needs_testbed=True,
            section_model=config.LatencySpec)
