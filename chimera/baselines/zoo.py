"""The paper's baselines, trained on exactly Chimera's training packets and scored on its test packets.

``BASELINES`` names each method, its family, and where its verdicts come from:
- ``reference integer``: an integer switch-table implementation evaluated offline
  (Leo: range tables + leaf table; equal to its float tree on every packet);
- ``software``: a float (or binarized, but not table-mapped) model, marked † in
  every table.

Every method reads what Chimera reads (chimera.baselines.features.fair_inputs:
the token fields of the flow's last ``window`` packets, the protocol, the ports
raw and in canonical forms, the packet index), each in its own form (trees split
on the integers; the neural models read a normalized encoding), over Chimera's
window (Leo too), and is tuned under the comparison's budget
(chimera.baselines.budget): the same number of configurations, chosen on
validation macro-F1, balanced class weights, early stopping by patience. Each
returns one verdict per test packet, so packet-level macro-F1 is the same metric
for every row, and reports the configuration it chose, every configuration's
validation score and (trained in epochs) how many it ran and why it stopped.
Input scale (bits of input per decision) and model size are measured from what
was built.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chimera.baselines import neural
from chimera.baselines.anomaly import FloatAutoEncoder
from chimera.baselines.budget import EPOCH_CAP, PATIENCE, Search, Tuning, kept_index, search_of, tuning_columns
from chimera.baselines.features import FIELD_BITS, WindowSpec, fair_inputs, input_bits, window_features
from chimera.baselines.leo import fit_leo
from chimera.baselines.yardsticks import FOREST_TREES, tune_forest, tune_tree
from chimera.data.dataset import Dataset
from chimera.data.flows import sample_whole_flows
from chimera.data.tokens import Tokens
from chimera.errors import ConfigError
from chimera.formats.rows import Cells
from chimera.metrics.classification import macro_f1

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BaselineInfo:
    paper: str
    family: str
    where: str          # "reference integer" | "software"
    task: str = "classification"   # or "anomaly (benign vs attack)"


BASELINES: dict[str, BaselineInfo] = {
    "Leo": BaselineInfo("Leo (decision tree in range + leaf tables)", "tree", "reference integer"),
    "N3IC": BaselineInfo("N3IC (binary MLP)", "mlp", "software"),
    "MLP-B": BaselineInfo("MLP-B (float MLP)", "mlp", "software"),
    "BoS": BaselineInfo("BoS (binarized RNN)", "rnn", "software"),
    "RNN-B": BaselineInfo("RNN-B (float GRU)", "rnn", "software"),
    "CNN-B": BaselineInfo("CNN-B (1-D CNN, 16 ch)", "cnn", "software"),
    "CNN-M": BaselineInfo("CNN-M (1-D CNN, 2 x 32 ch)", "cnn", "software"),
    "CNN-L": BaselineInfo("CNN-L (1-D CNN, 3 x 64 ch)", "cnn", "software"),
    "AutoEncoder": BaselineInfo("AutoEncoder (float, benign-trained)", "autoencoder", "software",
                                "anomaly (benign vs attack)"),
    # the project's yardsticks (not the paper's baselines): every input Chimera uses, ports included
    "Forest (yardstick)": BaselineInfo(f"random forest, {FOREST_TREES} trees (max_features tuned on validation)",
                                       "yardstick", "software"),
    "Tree (yardstick)": BaselineInfo("decision tree (depth tuned on validation)", "yardstick", "software"),
}
PAPER_BASELINES = tuple(n for n, b in BASELINES.items() if b.family != "yardstick")
SEQUENCE_BASELINES = ("BoS", "RNN-B", "CNN-B", "CNN-M", "CNN-L", "N3IC", "MLP-B")


def info_family(name: str) -> str:
    return BASELINES[name].family


def check_names(names: list[str], where: str) -> None:
    bad = [n for n in names if n not in BASELINES]
    if bad:
        raise ConfigError(f"{where}: unknown baseline(s) {bad}", f"choose from {', '.join(BASELINES)}")


@dataclass
class BaselineSettings:
    """Inputs and budget. ``window`` is Chimera's (every method, Leo included, reads the same packets);
    ``epochs`` (the guard cap), ``patience`` and the grids are the comparison's budget
    (chimera.baselines.budget); ``max_train_packets`` is Chimera's training sample."""

    window: int = 8
    epochs: int = EPOCH_CAP
    patience: int = PATIENCE
    max_train_packets: int = 0
    tuning: Tuning = "full"
    autoencoder_quantile: float = 0.99

    @staticmethod
    def like(model: Any, **kw: Any) -> "BaselineSettings":
        """The budget with Chimera's training sample (its model config) and the settings ``kw``."""
        return BaselineSettings(max_train_packets=model.max_train_packets, **kw)


@dataclass
class BaselineResult:
    name: str
    pred: np.ndarray                 # per test packet: class index (classification) or 0/1 (anomaly)
    where: str
    input_bits: int
    model_bits: int
    per_flow_bits: int
    seconds: float
    resources: dict[str, int] = field(default_factory=dict)   # table entries and bits, where a switch table holds it
    extra: Cells = field(default_factory=dict)  # the method's own columns of its row
    #: anomaly detectors: per test packet, the score the threshold cuts (the evaluator reports its AUC)
    score: np.ndarray | None = None


@dataclass
class SplitFeatures:
    """Window features of the three splits for one WindowSpec (computed once, shared by the methods)."""

    spec: WindowSpec
    x_tr: np.ndarray
    y_tr: np.ndarray
    x_va: np.ndarray
    y_va: np.ndarray
    x_te: np.ndarray

    @classmethod
    def build(cls, ds: Dataset, tokens: Tokens, rows: tuple[np.ndarray, np.ndarray, np.ndarray], spec: WindowSpec,
              max_train: int, seed: int) -> "SplitFeatures":
        """The windows of the three splits; with ``max_train``, Chimera's own training sample (whole flows,
        drawn with the same seed: chimera.data.flows.sample_whole_flows), so every method trains on the same rows."""
        tr, va, te = rows
        tr = sample_whole_flows(tr, ds.flows.flow_id, max_train, seed)
        f = (lambda r: window_features(ds.table, tokens, ds.flows, r, spec))
        return cls(spec, f(tr), ds.labels[tr].astype(np.int64), f(va), ds.labels[va].astype(np.int64), f(te))


def stored_bits(spec: WindowSpec) -> int:
    """Per-flow state of a model that re-reads its window: the earlier (window - 1) packets' fields."""
    return (spec.window - 1) * sum(FIELD_BITS[f] for f in spec.fields)


def spec_of(name: str, st: BaselineSettings) -> WindowSpec:
    """What ``name`` reads per decision: Chimera's inputs over Chimera's window, for every method."""
    return fair_inputs(st.window)


@dataclass
class Candidate:
    """One configuration of a method's grid, trained, with its validation macro-F1."""

    config: dict[str, Any]  # library boundary: the estimator's keyword arguments
    val_f1: float
    result: Any


# dict[str, Any]: library boundary: the estimator's keyword arguments
def choose(candidates: list[Candidate]) -> tuple[Candidate, dict[str, Any]]:
    """The candidate the budget keeps (``kept_index``: the first within its tie band of the best validation
    macro-F1), and the columns every method's row
    carries: the chosen configuration and each configuration's validation score."""
    best = candidates[kept_index([c.val_f1 for c in candidates])]
    return best, tuning_columns(Search.label(best.config), {Search.label(c.config): c.val_f1 for c in candidates})


# dict[str, Any]: library boundary: the estimator's keyword arguments
def tune(search: Search, fit: Callable[[dict[str, Any]], tuple[float, Any]], tuning: Tuning) -> list[Candidate]:
    """Every configuration ``search`` tries (a grid's, or a walk's placed by the scores before), fitted: ``fit``
    maps a configuration to (its validation macro-F1, what was fitted)."""
    return [cand for _, cand in search.run(lambda c: Candidate(c, *fit(c)), lambda cand: cand.val_f1, tuning)]


def run_baseline(name: str, ds: Dataset, tokens: Tokens, rows: tuple[np.ndarray, np.ndarray, np.ndarray],
                 n_classes: int, attack_classes: list[int], st: BaselineSettings, seed: int,
                 cache: dict[Any, SplitFeatures] | None = None) -> BaselineResult:
    """Train ``name`` on the training rows and predict every test row."""
    check_names([name], "baselines")
    cache = cache if cache is not None else {}
    spec = spec_of(name, st)
    if spec not in cache:
        cache[spec] = SplitFeatures.build(ds, tokens, rows, spec, st.max_train_packets, seed)
    sf = cache[spec]
    t0 = time.perf_counter()
    info = BASELINES[name]
    search, tuning = search_of(name, st.tuning)
    if name == "Leo":
        def leo(c: dict[str, Any]) -> tuple[float, Any]:  # library boundary: the estimator's keyword arguments
            tree, itree = fit_leo(sf.x_tr, sf.y_tr, spec, c["depth"], seed)
            return macro_f1(sf.y_va, itree.predict(sf.x_va)), (tree, itree)
        best, cols = choose(tune(search, leo, tuning))
        tree, itree = best.result
        pred = itree.predict(sf.x_te)
        res = itree.resources()
        return BaselineResult(name, pred, info.where, input_bits(spec), res["model_bits"], itree.per_flow_bits(),
                              time.perf_counter() - t0, res,
                              {"float_tree_agreement": float(np.mean(pred == tree.predict(sf.x_te))),
                               "leaves": int(len(itree.leaf_class)), "depth": best.config["depth"], **cols})
    if name == "AutoEncoder":
        return _autoencoder(sf, spec, attack_classes, st, search, tuning, seed, t0)
    if info.family == "yardstick":
        tuned = (tune_forest if name.startswith("Forest") else tune_tree)(sf.x_tr, sf.y_tr, sf.x_va, sf.y_va, seed,
                                                                          st.tuning)
        m = tuned.model
        nodes = sum(e.tree_.node_count for e in m.estimators_) if hasattr(m, "estimators_") else m.tree_.node_count
        cols = tuning_columns(Search.label(tuned.chosen), tuned.validation)
        # size: per node a feature id (8 bits), a 32-bit threshold and two 32-bit child/leaf words
        return BaselineResult(name, tuned.predict(sf.x_te), info.where, input_bits(spec), nodes * (8 + 32 + 64),
                              stored_bits(spec), time.perf_counter() - t0,
                              extra={"nodes": int(nodes), **{f"tuned_{k}": v for k, v in tuned.chosen.items()},
                                     **cols})
    vocab = neural.PortVocab.fit(sf.x_tr, spec)
    enc = (lambda x: neural.encode(x, spec, vocab))
    x_tr, x_va, x_te = enc(sf.x_tr), enc(sf.x_va), enc(sf.x_te)

    def train(c: dict[str, Any]) -> tuple[float, Any]:  # library boundary: the estimator's keyword arguments
        fit = neural.fit_predict(name, x_tr, sf.y_tr, x_va, sf.y_va, x_te, n_classes, seed,
                                 neural.TrainSettings(epochs=st.epochs, patience=st.patience,
                                                      ports=(vocab.ids, len(neural.port_fields(spec))), **c))
        return fit.val_f1, fit
    cands = tune(search, train, tuning)
    best, cols = choose(cands)
    fit = best.result
    return BaselineResult(name, fit.pred, info.where, input_bits(spec), fit.model_bits, stored_bits(spec),
                          time.perf_counter() - t0,
                          extra={"port_vocabulary": vocab.ids - 1, "epochs_run": fit.epochs_run,
                                 "stopped_by": fit.stopped_by, "epoch_cap": st.epochs,
                                 "cap_reached_in": sum(c.result.stopped_by == "cap" for c in cands), **cols})


def _autoencoder(sf: SplitFeatures, spec: WindowSpec, attack_classes: list[int], st: BaselineSettings,
                 search: Search, tuning: Tuning, seed: int, t0: float) -> BaselineResult:
    """The AutoEncoder does the anomaly task (benign vs attack): trained on benign windows only; the threshold is
    the benign validation windows' score quantile (``BaselineSettings.autoencoder_quantile``); early stopping and
    the choice of configuration on the validation split's benign-vs-attack macro-F1 (its labels say which windows
    are attacks), the metric every method is chosen by. It returns its test scores too, and its row reports their
    AUC (``test_auc``): near 0.5, the score cannot tell attacks from benign windows whatever the threshold."""
    benign = ~np.isin(sf.y_tr, attack_classes)
    attack_va = np.isin(sf.y_va, attack_classes)
    x_tr, x_va = neural.encode(sf.x_tr[benign], spec), neural.encode(sf.x_va, spec)

    def train(c: dict[str, Any]) -> tuple[float, Any]:  # library boundary: the estimator's keyword arguments
        ae = FloatAutoEncoder.fit(x_tr, seed, epochs=st.epochs, batch=c["batch_size"], lr=c["lr"],
                                  val=(x_va, attack_va), patience=st.patience, quantile=st.autoencoder_quantile)
        return ae.val_f1, ae
    cands = tune(search, train, tuning)
    best, cols = choose(cands)
    ae = best.result
    thr = ae.threshold(x_va[~attack_va], st.autoencoder_quantile)
    score = ae.score(neural.encode(sf.x_te, spec))
    pred = (score > thr).astype(np.int64)
    return BaselineResult("AutoEncoder", pred, BASELINES["AutoEncoder"].where, input_bits(spec), ae.model_bits(),
                          stored_bits(spec), time.perf_counter() - t0,
                          score=score,
                          extra={"threshold": thr, "benign_quantile": st.autoencoder_quantile,
                                 "epochs_run": ae.epochs_run, "stopped_by": ae.stopped_by, "epoch_cap": st.epochs,
                                 "cap_reached_in": sum(c.result.stopped_by == "cap" for c in cands), **cols})
