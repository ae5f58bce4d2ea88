"""The stability kind (stability24h): one drifting day through Chimera, Fast-Only and Static-Map.

The day is generated already compressed (``stability.compression``): flows
arrive, drift and follow the diurnal load on the compressed clock, each flow
keeping its own packet timing, so training and replay see the same inter-arrival
features. The model trains on flows that start in the first ``train_hours``;
every packet of the day is then replayed (the switch sees all traffic, as
deployed) and the test packets (held-out flows of the training hours, every
later flow) are scored per time bin:

- **Chimera**: the fast path (class-EMA prior, GAMMA > 0) and the slow loop
  (re-fitted Map tables installed live);
- **Fast-Only**: the fast path, no installs;
- **Static-Map**: neither (GAMMA = 0, no installs).

Conformance holds across every install: the reference replays the same frames
switching versions where the switch did (chimera.targets.testbed.conformance).
With ``diagnose``, slow-loop variants run on the reference too, so the report can
say what the loop's parts did.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NightlyTrack
from chimera.experiments.kinds.stability import config, render, run
from chimera.experiments.kinds.stability import tables as T

KIND = Kind("stability", "a drifting day through Chimera, Fast-Only and Static-Map (stability24h)", config.StabilityExperiment,
            run.run, render.render, (T.STABILITY, T.STABILITY_BINS, T.CONTROL, T.DIAGNOSIS),
            nightly=NightlyTrack(T.STABILITY, "configuration", "f1_mean"), resolve=run.resolve,
            section_model=config.StabilitySection)
