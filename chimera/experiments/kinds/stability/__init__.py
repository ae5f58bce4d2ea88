"""The stability kind (stability24h, stability_labelshift, adaptations): one drifting day through every adaptation.

The day is generated already compressed (``stability.compression``): flows
arrive, drift and follow the diurnal load on the compressed clock, each flow
keeping its own packet timing, so training and replay see the same inter-arrival
features. The model trains on flows that start in the first ``train_hours``, once
per training seed (``stability.seeds``); every packet of the day is then replayed
(the switch sees all traffic, as deployed) and the test packets (held-out flows of
the training hours, every later flow) are scored per time bin, for each
configuration of ``config.ADAPTATIONS``: Static-Map, Fast-Only (the class-EMA
prior), Re-cluster-Only and Chimera (the slow loop's Map re-fit, without and with
the fast prior), Prior-Only and Chimera+Prior (the slow loop's EM prior-shift
correction), and the Oracle (retrained on labelled recent traffic, on the
reference: a ceiling, not a switch configuration).

The report decomposes the day's drift per bin (covariate, label, concept shift:
chimera.metrics.drift) beside the F1 curves, states paired differences with
intervals over seeds and blocks of bins, and measures each generator knob alone.
Conformance holds across every install: the reference replays the same frames
switching versions where the switch did (chimera.targets.testbed.conformance).
With ``diagnose``, slow-loop variants run on the reference too.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NightlyTrack
from chimera.experiments.kinds.stability import config, render, run
from chimera.experiments.kinds.stability import tables as T

KIND = Kind("stability", "a drifting day through every adaptation, with its drift decomposed (stability24h)", config.StabilityExperiment,
            run.run, render.render, (T.STABILITY, T.STABILITY_SEEDS, T.STABILITY_BINS, T.DIFFERENCES, T.SENSITIVITY, T.ORACLE, T.CONTROL, T.DRIFT,
             T.DRIFT_KNOBS, T.DIAGNOSIS),
            nightly=NightlyTrack(T.STABILITY, "configuration", "f1_mean"), resolve=run.resolve,
            section_model=config.StabilitySection)
