"""The roc kind's run: what it measures and the tables it writes."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score, roc_curve

from chimera.baselines.anomaly import FloatAutoEncoder, TableAutoEncoder, ZThreshold
from chimera.baselines.features import TOKEN_FIELDS, WindowSpec, window_features
from chimera.baselines.neural import encode
from chimera.errors import DatasetError
from chimera.experiments.kinds.roc import tables as T
from chimera.experiments.kinds.roc.config import RocExperiment
from chimera.experiments.kinds.yardstick_common import named_data
from chimera.experiments.stages.context import RunContext
from chimera.formats.rows import frame

log = logging.getLogger(__name__)


CURVE_POINTS = 200


def _curve(y: np.ndarray, s: np.ndarray) -> pd.DataFrame:
    fpr, tpr, _ = roc_curve(y, s)
    keep = np.unique(np.r_[0, np.linspace(0, len(fpr) - 1, CURVE_POINTS).astype(int), len(fpr) - 1])
    return pd.DataFrame({"fpr": fpr[keep], "tpr": tpr[keep]})


def run(ctx: RunContext[RocExperiment]) -> None:
    rc = ctx.cfg.roc
    spec = WindowSpec(window=rc.window, fields=TOKEN_FIELDS, extra=("proto",))
    rows: list[T.RocRow] = []
    curves = []
    for nd in named_data(ctx):
        att = nd.attack_classes(rc.attack_classes)
        d = nd.data
        if not att:
            raise DatasetError(f"roc: dataset {nd.name} has none of the attack classes {rc.attack_classes}",
                               "give it attacks (dataset.synthetic.attacks) or set roc.attack_classes")
        x_tr = window_features(d.ds.table, d.tokens, d.ds.flows, d.train_rows, spec)
        benign = ~np.isin(d.y(d.train_rows), att)
        x_te = window_features(d.ds.table, d.tokens, d.ds.flows, d.test_rows, spec)
        y = np.isin(d.y(d.test_rows), att).astype(np.int64)
        with ctx.timed(f"detectors:{nd.name}"):
            tae = TableAutoEncoder.fit(x_tr[benign], spec, rc.codes, seed=ctx.cfg.seed)
            fae = FloatAutoEncoder.fit(encode(x_tr[benign], spec), ctx.cfg.seed, epochs=rc.epochs)
            zt = ZThreshold.fit(x_tr[benign], spec)
        scores = {"Chimera table AutoEncoder (integer)": (tae.score(x_te), "reference integer",
                                                          tae.resources()["model_bits"]),
                  "AutoEncoder (float)": (fae.score(encode(x_te, spec)), "software", fae.model_bits()),
                  "z-score threshold": (zt.score(x_te), "software", 64 * len(zt.mean))}
        for det, (s, where, bits) in scores.items():
            auc = float(roc_auc_score(y, s))
            rows.append(T.RocRow(nd.name, det, where, auc, bits / 1000, int(y.size), int(y.sum()), int(benign.sum())))
            curves.append(_curve(y, s).assign(dataset=nd.name, detector=det))
            log.info("[%s] %s: AUC %.4f", nd.name, det, auc)
        T.ROC.write(frame(rows, T.RocRow), ctx.run.path)
        T.ROC_CURVES.write(pd.concat(curves), ctx.run.path)
