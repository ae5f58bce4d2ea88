"""Packet-level classification metrics (the paper's "macro accuracy" is macro-F1 over packets)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support


def macro_f1(y: np.ndarray, pred: np.ndarray) -> float:
    """Packet-level macro-F1 over the classes present in ``y`` (the metric every table reports)."""
    if np.asarray(y).size == 0:
        return 0.0
    return float(precision_recall_fscore_support(y, pred, labels=np.unique(y), average="macro",
                                                 zero_division=0)[2])


def summary(y: np.ndarray, pred: np.ndarray, classes: list[str]) -> dict[str, float]:
    """Macro precision/recall/F1 and accuracy over the classes present in ``y``."""
    labels = np.unique(y)
    p, r, f, _ = precision_recall_fscore_support(y, pred, labels=labels, average="macro", zero_division=0)
    return {"macro_precision": float(p), "macro_recall": float(r), "macro_f1": float(f),
            "accuracy": float(np.mean(y == pred)) if y.size else float("nan"), "packets": int(y.size)}


#: a class with fewer test flows than this gets no per-class number, but "too few flows" (issue 53): the packets
#: of a handful of flows are not a sample of a class, and one flow's verdicts swing its F1 from 0 to 1
MIN_TEST_FLOWS = 5
TOO_FEW = "too few flows"


def per_class(y: np.ndarray, pred: np.ndarray, classes: list[str], flows: np.ndarray | None = None
              ) -> pd.DataFrame:
    """Per class: precision, recall, F1 and support (test packets); with ``flows`` (each packet's flow id) also
    its test flows, and no number for a class with fewer than ``MIN_TEST_FLOWS`` of them (``scored``: "too few
    flows", its precision, recall and F1 left empty)."""
    labels = np.arange(len(classes))
    p, r, f, s = precision_recall_fscore_support(y, pred, labels=labels, zero_division=0)
    out = pd.DataFrame({"class": classes, "precision": p, "recall": r, "f1": f, "support": s})
    if flows is not None:
        per = pd.DataFrame({"y": np.asarray(y), "flow": np.asarray(flows)}).groupby("y")["flow"].nunique()
        out["test_flows"] = [int(per.get(i, 0)) for i in labels]
        few = out["test_flows"] < MIN_TEST_FLOWS
        out["scored"] = np.where(few, TOO_FEW, "")
        out.loc[few, ["precision", "recall", "f1"]] = np.nan
    return out


def confusion(y: np.ndarray, pred: np.ndarray, classes: list[str]) -> pd.DataFrame:
    """Tidy confusion matrix: one row per (true, predicted) pair."""
    m = confusion_matrix(y, np.where(pred < len(classes), pred, -1), labels=np.arange(len(classes)))
    t, p = np.meshgrid(np.arange(len(classes)), np.arange(len(classes)), indexing="ij")
    return pd.DataFrame({"true": np.array(classes)[t.ravel()], "pred": np.array(classes)[p.ravel()],
                         "count": m.ravel()})


def flow_level(flow_id: np.ndarray, y: np.ndarray, pred: np.ndarray) -> pd.DataFrame:
    """Per flow: label, majority verdict, share of packets classified correctly."""
    df = pd.DataFrame({"flow": flow_id, "label": y, "pred": pred, "correct": y == pred})
    g = df.groupby("flow")
    return pd.DataFrame({"label": g["label"].first(), "packets": g.size(),
                         "majority_pred": g["pred"].agg(lambda s: int(np.bincount(s).argmax())),
                         "packet_accuracy": g["correct"].mean()}).reset_index()
