"""The roc kind's book blocks: the ROC and hyper-dimension rows, and the detectors of the roc kind."""

from __future__ import annotations

import pandas as pd

from chimera.experiments.kinds.hyper_dim.tables import HYPER_DIM
from chimera.experiments.kinds.roc.tables import ROC
from chimera.report.book import Blocks, Book, paragraph
from chimera.report.fmt import f

BLOCKS = Blocks()


@BLOCKS("roc-hyper-dim")
def roc_hyper_dim(b: Book) -> str:
    r = b.runs.need("roc")
    d = r.table(ROC)
    dets = list(dict.fromkeys(d["detector"]))
    sets = list(dict.fromkeys(d["dataset"]))
    parts = [f"{det}: " + " / ".join(f(d[(d.detector == det) & (d.dataset == s)]["auc"].iloc[0]) for s in sets)
             for det in dets]
    h = b.runs.need("hyper_dim")
    g = h.table(HYPER_DIM)

    def cell(x: pd.Series) -> str:
        return f"{f(x['f1'])} (m={int(x['m'])}, d_v={int(x['d_v'])}, {int(x['bits'])} bits)"
    spans = [f"on {ds}: F1 from {cell(d.loc[d['f1'].idxmin()])} to {cell(d.loc[d['f1'].idxmax()])}"
             for ds, d in g.groupby("dataset", sort=False)]
    return (f"The benign-trained detectors ({r.cite()}), AUC on {' / '.join(sets)}: " + "; ".join(parts) +
            f". The m x d_v x bits grid ({h.cite()}), each dataset's lowest and highest cell: " + "; ".join(spans)
            + ".")


@BLOCKS("integer-autoencoder")
def integer_autoencoder(b: Book) -> str:
    """The roc kind's detectors, in the words of the module that builds them."""
    from chimera.baselines import anomaly
    return "Quoted from `chimera.baselines.anomaly`:\n\n" + "\n\n".join(
        paragraph(anomaly.__doc__, i) for i in (1, 2))
