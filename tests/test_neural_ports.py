"""The neural baselines read ports as Chimera does: ids of a vocabulary fitted on the training split by
Chimera's own rule, embedded by the model (issue 53: port / 65535 is a number whose order means nothing)."""

from __future__ import annotations

import numpy as np
import torch

from chimera.baselines import neural
from chimera.baselines.features import fair_inputs
from chimera.model.tokenizer import ports_by_peers


def _windows(ports: np.ndarray, spec) -> np.ndarray:
    """Window features whose packets are all alike except the current packet's ports."""
    n = len(ports)
    x = np.zeros((n, spec.n_features), np.int64)
    x[:, : spec.window * len(spec.fields)] = 1
    col = {f: spec.window * len(spec.fields) + i for i, f in enumerate(spec.extra)}
    x[:, col["proto"]] = 6
    x[:, col["sport"]] = 40000 + np.arange(n) % 500      # many clients ...
    x[:, col["dport"]] = ports                            # ... meet a few services
    x[:, col["lo_port"]] = np.minimum(x[:, col["sport"]], ports)
    x[:, col["hi_port"]] = np.maximum(x[:, col["sport"]], ports)
    x[:, col["responder_port"]] = ports
    return x


def test_the_vocabulary_is_chimeras_rule_and_the_encoding_carries_its_ids() -> None:
    spec = fair_inputs(4)
    ports = np.array([80, 443, 22, 8080] * 50)
    x = _windows(ports, spec)
    vocab = neural.PortVocab.fit(x, spec)
    base = spec.window * len(spec.fields)
    want = ports_by_peers(x[:, base + spec.extra.index("sport")], x[:, base + spec.extra.index("dport")],
                          neural.PORT_IDS_MAX - 1)
    assert np.array_equal(vocab.ports, want)
    enc = neural.encode(x, spec, vocab)
    assert enc.shape == (len(x), spec.window, neural.width(spec, vocab))
    k = len(neural.port_fields(spec))
    dport_col = neural.port_fields(spec).index("dport")
    assert np.array_equal(enc[:, -1, -k + dport_col].astype(np.int64), vocab.id_of(ports))
    assert not np.isin(enc[..., :-k], ports / 65535.0).any()   # no port is read as a scaled number any more


def test_a_label_carried_by_the_port_alone_is_learned_through_the_embedding() -> None:
    """Services 80 and 8080 are one class, 22 and 443 the other: no order of the port numbers separates them,
    their ids do. The float MLP reads it through its embedding; its id columns reach the output."""
    spec = fair_inputs(4)
    ports = np.array([80, 443, 22, 8080] * 100)
    y = np.isin(ports, (80, 8080)).astype(np.int64)
    x = _windows(ports, spec)
    vocab = neural.PortVocab.fit(x, spec)
    enc = neural.encode(x, spec, vocab)
    ts = neural.TrainSettings(epochs=60, patience=60, lr=1e-2, batch_size=64,
                              ports=(vocab.ids, len(neural.port_fields(spec))))
    fit = neural.fit_predict("MLP-B", enc, y, enc, y, enc, 2, 1, ts)
    assert fit.val_f1 == 1.0 and np.array_equal(fit.pred, y)
    model = neural.build("MLP-B", spec.window, 2, enc.shape[2], ts.ports)
    assert isinstance(model, neural.WithPorts)
    with torch.no_grad():
        model.eval()
        a = model(torch.from_numpy(enc[:1]))
        b = enc[:1].copy()
        b[..., -1] = (b[..., -1] + 1) % vocab.ids                # only the responder port's id changes
        assert not torch.equal(a, model(torch.from_numpy(b)))
