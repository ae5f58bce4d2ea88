"""Baselines and yardsticks: inputs cover Chimera's, window features are right, the yardsticks train."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from chimera.baselines.features import MISSING, WindowSpec, input_bits, window_features
from chimera.baselines.yardsticks import chimera_inputs, fit_yardsticks
from chimera.data.dataset import load_dataset
from chimera.data.tokens import tokenize
from chimera.experiments.stages.dataset import prepare
from chimera.rules.spec import KEY_FIELDS

#: what each of Chimera's inputs is called among the yardsticks' fields
RULE_FIELD_AS_INPUT = {"proto": "proto", "tcp_flags": "tcp_flags", "dir": "direction", "flow_pkts": "pkt_index",
                       "sport": "sport", "dport": "dport", "ip_len": "ip_len"}
TOKEN_INPUTS = {"ip_len", "iat_bucket", "direction", "tcp_flags"}


def test_yardsticks_get_every_input_chimera_uses() -> None:
    spec = chimera_inputs(8)
    given = set(spec.fields) | set(spec.extra)
    assert {RULE_FIELD_AS_INPUT[f] for f, _ in KEY_FIELDS} <= given  # a new rule field fails here first
    assert TOKEN_INPUTS <= set(spec.fields) and spec.window == 8


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


def test_yardsticks_train_and_predict(synth_small: Path) -> None:
    data = prepare(load_dataset(synth_small), 3)
    r = fit_yardsticks(data.ds, data.tokens, data.train_rows, data.y(data.train_rows), data.test_rows, 8, 1)
    y = data.y(data.test_rows)
    assert r.forest.shape == r.tree.shape == y.shape
    assert np.mean(r.forest == y) > 0.5
