"""The roc kind: anomaly detection of the injected attacks by detectors trained on benign flows only.

Per dataset: the integer table AutoEncoder built from Chimera's primitives
(chimera.baselines.anomaly.TableAutoEncoder), a float AutoEncoder and a z-score
threshold, all on the same benign training packets; scored on every test packet,
attack classes positive. Writes roc.csv (AUC per detector) and roc_curves.csv.
"""

from __future__ import annotations

from chimera.experiments.kinds.base import Kind, NoSection
from chimera.experiments.kinds.roc import config, render, run
from chimera.experiments.kinds.roc import tables as T

KIND: Kind[config.RocExperiment, NoSection] = Kind("roc", "benign-trained anomaly detectors on injected attacks (AUC, ROC)", config.RocExperiment, run.run,
            render.render, (T.ROC, T.ROC_CURVES))
