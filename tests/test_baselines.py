"""Baselines and yardsticks: every method reads what Chimera reads (derived from Chimera's own definitions),
window features are right, the yardsticks tune on validation and learn from their inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chimera.baselines.features import MISSING, WindowSpec, chimera_reads, input_bits, window_features
from chimera.baselines.yardsticks import fit_yardsticks
from chimera.baselines.zoo import BASELINES, BaselineSettings, spec_of
from chimera.data.dataset import load_dataset
from chimera.data.tokens import tokenize
from chimera.experiments.stages.dataset import prepare
from chimera.metrics.classification import macro_f1


def test_every_method_reads_what_chimera_reads(synth_small: Path) -> None:
    """Derived from Chimera's token, sub-token and rule-key definitions (a new input of Chimera's fails here
    until every method gets it); and the feature builder produces every field the methods are given."""
    reads = chimera_reads()
    assert {"ip_len", "iat_bucket", "direction", "tcp_flags", "proto", "sport", "dport", "pkt_index"} <= reads
    st = BaselineSettings(window=8)
    ds = load_dataset(synth_small)
    tok = tokenize(ds.table, ds.flows)
    rows = np.flatnonzero(ds.flows.flow_id >= 0)[:50]
    for name in BASELINES:
        spec = spec_of(name, st)
        assert reads <= set(spec.fields) | set(spec.extra), (name, reads - set(spec.fields) - set(spec.extra))
        assert spec.window == 8  # Chimera's window, for every method (Leo too)
        x = window_features(ds.table, tok, ds.flows, rows, spec)
        assert x.shape == (rows.size, spec.n_features) and (x[:, -len(spec.extra):] >= 0).all()


def test_window_features_follow_the_flow(synth_small: Path) -> None:
    ds = load_dataset(synth_small)
    tok = tokenize(ds.table, ds.flows)
    f = ds.flows
    rows = np.flatnonzero(f.flow_id >= 0)[:400]
    x = window_features(ds.table, tok, f, rows, WindowSpec(window=3, fields=("ip_len",), extra=("pkt_index",)))
    for i, r in enumerate(rows):
        same = np.flatnonzero(f.flow_id == f.flow_id[r])
        same = same[np.argsort(f.pkt_index[same])]
        k = int(f.pkt_index[r])
        want = [int(ds.table.ip_len[same[k - lag]]) if k - lag >= 0 else MISSING for lag in range(3)]
        assert x[i, :3].tolist() == want and x[i, 3] == min(k, 255)


def test_input_bits_counts_the_window() -> None:
    assert input_bits(WindowSpec(window=2, fields=("ip_len", "direction"), extra=("proto",))) == 2 * 17 + 8


def test_yardsticks_learn_from_their_inputs(synth_small: Path) -> None:
    """Tuned on validation (the choice is reported), and far better than the same models given the same inputs
    with the training labels shuffled: a yardstick that lost its alignment of inputs and labels fails here."""
    data = prepare(load_dataset(synth_small), 3)
    rows = (data.train_rows, data.val_rows, data.test_rows)
    y_tr, y_va, y = data.y(data.train_rows), data.y(data.val_rows), data.y(data.test_rows)
    r = fit_yardsticks(data.ds, data.tokens, rows, (y_tr, y_va), 8, 1)
    assert r.forest.shape == r.tree.shape == y.shape
    assert "depth" in r.tree_params and "max_features" in r.forest_params
    shuffled = fit_yardsticks(data.ds, data.tokens, rows, (np.random.default_rng(0).permutation(y_tr), y_va), 8, 1)
    assert macro_f1(y, r.forest) > macro_f1(y, shuffled.forest) + 0.3
    assert macro_f1(y, r.tree) > macro_f1(y, shuffled.tree) + 0.3
