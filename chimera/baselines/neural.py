"""The neural baselines of the paper's Table 1, in PyTorch, on the flow's last packets.

Every model reads the same per-packet encoding of the window features
(chimera.baselines.features.fair_inputs): per lag, a presence bit, IP length /
1500, IAT bucket / 15, direction and the eight TCP flag bits; plus, for the
current packet, the protocol class one-hot, the packet index / 255 and its ports
as Chimera reads them: ids of a port vocabulary fitted on the training split by
Chimera's own rule (``PortVocab``: chimera.model.tokenizer.ports_by_peers, the
same size), each id embedded by the model (``PortEmbed``), repeated on every
lag. A port read as port / 65535 gave the networks a number whose order means
nothing while Chimera reads a vocabulary and trees split on exact ports (issue
53: on suricata-zeek-apps a tree without ports falls from 0.96 to 0.42). The
anomaly detectors' encoding (``vocab=None``) keeps the normalized ports. MLPs see the window
flattened; RNNs and CNNs see it as a sequence, oldest packet first. Training
keeps the epoch with the best validation macro-F1 and stops after ``patience``
epochs without a better one (Chimera's own rule); learning rate and batch size
come from the comparison's budget (chimera.baselines.budget), tuned on validation.

- N3IC: a binary MLP (sign weights and activations, straight-through gradients),
  as N3IC runs binary neural networks on NIC/switch hardware.
- MLP-B: the same layout in float.
- BoS: a binarized RNN (GRU cell whose hidden state is binarized each step,
  as Brain-on-Switch keeps a few-bit hidden state per flow).
- RNN-B: a float GRU.
- CNN-B/M/L: 1-D convolutions over the window, small/medium/large.

Model size is measured from the trained module's parameters: 1 bit per
binarized weight, 32 bits per float parameter.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from chimera.baselines.budget import EPOCH_CAP, PATIENCE
from chimera.baselines.features import MISSING, WindowSpec
from chimera.data.tokens import PROTO_CLASSES, proto_class
from chimera.determinism import single_threaded
from chimera.metrics.classification import macro_f1
from chimera.model.tokenizer import PORT_IDS_MAX, ports_by_peers

log = logging.getLogger(__name__)
PER_LAG = 12  # present, len, iat, dir, 8 flag bits
#: the current packet's scalar inputs and what they are divided by
SCALE = {"sport": 65535.0, "dport": 65535.0, "lo_port": 65535.0, "hi_port": 65535.0, "responder_port": 65535.0,
         "pkt_index": 255.0}


#: the current packet's ports: read through the port vocabulary where one is given
PORT_FIELDS = ("sport", "dport", "lo_port", "hi_port", "responder_port")
#: floats per port id in the models' embedding
EMBED = 4


@dataclass(frozen=True)
class PortVocab:
    """The ports a model reads as ids, by Chimera's rule on the training split: ``ports[i]`` has id i + 1,
    every other port id 0 (chimera.model.tokenizer.MapTables.port_vocab, fitted the same way, the same size)."""

    ports: np.ndarray

    @classmethod
    def fit(cls, x_tr: np.ndarray, spec: WindowSpec, size: int = PORT_IDS_MAX - 1) -> "PortVocab":
        base = spec.window * len(spec.fields)
        col = {f: base + i for i, f in enumerate(spec.extra)}
        if "sport" not in col or "dport" not in col:
            return cls(np.zeros(0, np.int64))
        return cls(ports_by_peers(x_tr[:, col["sport"]], x_tr[:, col["dport"]], size))

    @property
    def ids(self) -> int:
        return int(self.ports.size) + 1

    def id_of(self, port: np.ndarray) -> np.ndarray:
        table = np.zeros(65536, np.int64)
        table[self.ports] = np.arange(1, self.ports.size + 1)
        return table[np.clip(np.asarray(port, np.int64), 0, 65535)]


def port_fields(spec: WindowSpec) -> list[str]:
    return [f for f in spec.extra if f in PORT_FIELDS]


def scalar_extras(spec: WindowSpec, vocab: PortVocab | None = None) -> list[str]:
    """The current packet's inputs encoded as normalized scalars (not the protocol, which is one-hot, nor the
    ports where a vocabulary reads them)."""
    return [f for f in spec.extra if f in SCALE and (vocab is None or f not in PORT_FIELDS)]


def width(spec: WindowSpec, vocab: PortVocab | None = None) -> int:
    """Features per lag of ``encode``'s output (port ids last, one column each, where a vocabulary is given)."""
    return PER_LAG + PROTO_CLASSES + len(scalar_extras(spec, vocab)) + (len(port_fields(spec)) if vocab else 0)


def encode(x: np.ndarray, spec: WindowSpec, vocab: PortVocab | None = None) -> np.ndarray:
    """[N, window, width(spec, vocab)] float32, oldest packet first (window features -> model input); with
    ``vocab``, the last columns hold the current packet's port ids (``PortEmbed`` embeds them)."""
    n, L = x.shape[0], spec.window
    nf = len(spec.fields)
    lag = x[:, : L * nf].reshape(n, L, nf)[:, ::-1]  # lag 0 (current) last
    idx = {f: i for i, f in enumerate(spec.fields)}
    present = lag[..., 0] != MISSING
    out = np.zeros((n, L, width(spec)), np.float32)
    out[..., 0] = present
    out[..., 1] = np.where(present, np.clip(lag[..., idx["ip_len"]], 0, 1500) / 1500.0, 0)
    out[..., 2] = np.where(present, lag[..., idx["iat_bucket"]] / 15.0, 0)
    out[..., 3] = np.where(present, lag[..., idx["direction"]], 0)
    flags = np.where(present, lag[..., idx["tcp_flags"]], 0).astype(np.int64)
    for b in range(8):
        out[..., 4 + b] = (flags >> b) & 1
    if "proto" in spec.extra:
        pc = proto_class(x[:, L * nf + list(spec.extra).index("proto")].astype(np.uint8))
        out[np.arange(n), :, PER_LAG + pc] = 1.0
    scal = scalar_extras(spec, vocab)
    for k, f in enumerate(scal):
        v = x[:, L * nf + list(spec.extra).index(f)].astype(np.float32) / SCALE[f]
        out[:, :, PER_LAG + PROTO_CLASSES + k] = v[:, None]
    if vocab is not None:
        for k, f in enumerate(port_fields(spec)):
            ids = vocab.id_of(x[:, L * nf + list(spec.extra).index(f)]).astype(np.float32)
            out[:, :, PER_LAG + PROTO_CLASSES + len(scal) + k] = ids[:, None]
    return out


class PortEmbed(nn.Module):
    """The last ``fields`` columns of the input are port ids: each is embedded (one table shared by the port
    fields) and the embeddings replace them on every lag."""

    def __init__(self, ids: int, fields: int, dim: int = EMBED) -> None:
        super().__init__()
        self.emb, self.k = nn.Embedding(ids, dim), fields

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = x[:, -1, -self.k:].long()            # the current packet's (the same on every lag)
        e = self.emb(ids).flatten(1)                # [N, fields * dim]
        return torch.cat([x[..., :-self.k], e[:, None, :].expand(-1, x.shape[1], -1)], dim=2)


class WithPorts(nn.Module):
    """A model whose input's port ids are embedded first."""

    def __init__(self, embed: PortEmbed, core: nn.Module) -> None:
        super().__init__()
        self.embed, self.core = embed, core

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.core(self.embed(x))


class _SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        ctx.save_for_backward(x)
        return torch.where(x >= 0, 1.0, -1.0)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:  # noqa: D102
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)


def bsign(x: torch.Tensor) -> torch.Tensor:
    return _SignSTE.apply(x)


class BinaryLinear(nn.Linear):
    """Sign(weight) in the forward pass; the float shadow weights only exist for training."""

    binary = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, bsign(self.weight), self.bias)


class MLP(nn.Module):
    def __init__(self, n_in: int, hidden: tuple[int, ...], n_out: int, binary: bool) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        d = n_in
        lin = BinaryLinear if binary else nn.Linear
        for h in hidden:
            layers += [lin(d, h), nn.BatchNorm1d(h)]
            d = h
        self.layers, self.binary = nn.ModuleList(layers), binary
        self.out = nn.Linear(d, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.flatten(1)
        for i in range(0, len(self.layers), 2):
            h = self.layers[i + 1](self.layers[i](h))
            h = bsign(h) if self.binary else torch.relu(h)
        return self.out(h)


class GRUNet(nn.Module):
    """A GRU over the window; ``binary``: the hidden state is binarized (sign) after every step."""

    def __init__(self, n_in: int, hidden: int, n_out: int, binary: bool) -> None:
        super().__init__()
        self.cell, self.binary, self.hidden = nn.GRUCell(n_in, hidden), binary, hidden
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.hidden)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            if self.binary:
                h = bsign(h)
        return self.out(h)


class CNN(nn.Module):
    def __init__(self, n_in: int, channels: tuple[int, ...], n_out: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        d = n_in
        for c in channels:
            layers += [nn.Conv1d(d, c, 3, padding=1), nn.ReLU()]
            d = c
        self.conv, self.out = nn.Sequential(*layers), nn.Linear(d, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.conv(x.transpose(1, 2)).amax(2))


ARCHITECTURES: dict[str, dict[str, Any]] = {  # library boundary: each architecture's keyword arguments
    "N3IC": {"family": "mlp", "hidden": (64, 32), "binary": True},
    "MLP-B": {"family": "mlp", "hidden": (64, 32), "binary": False},
    "BoS": {"family": "rnn", "hidden": 16, "binary": True},
    "RNN-B": {"family": "rnn", "hidden": 32, "binary": False},
    "CNN-B": {"family": "cnn", "channels": (16,)},
    "CNN-M": {"family": "cnn", "channels": (32, 32)},
    "CNN-L": {"family": "cnn", "channels": (64, 64, 64)},
}


def build(name: str, window: int, n_classes: int, d: int = PER_LAG + PROTO_CLASSES,
          ports: tuple[int, int] | None = None) -> nn.Module:
    """``d``: features per lag (``width`` of the encoding); ``ports``: (vocabulary ids, port fields) where the
    last columns are port ids to embed."""
    if ports is not None and ports[1] > 0:
        embed = PortEmbed(ports[0], ports[1])
        return WithPorts(embed, build(name, window, n_classes, d - ports[1] + ports[1] * EMBED))
    a = ARCHITECTURES[name]
    if a["family"] == "mlp":
        return MLP(window * d, a["hidden"], n_classes, a["binary"])
    if a["family"] == "rnn":
        return GRUNet(d, a["hidden"], n_classes, a["binary"])
    return CNN(d, a["channels"], n_classes)


def model_bits(m: nn.Module) -> int:
    """Measured size: 1 bit per weight of a binarized layer, 32 bits per other parameter."""
    bits = 0
    for mod in m.modules():
        for pname, p in mod.named_parameters(recurse=False):
            bits += p.numel() * (1 if getattr(mod, "binary", False) and pname == "weight" else 32)
    return int(bits)


@dataclass
class TrainSettings:
    epochs: int = EPOCH_CAP
    patience: int = PATIENCE
    batch_size: int = 512
    lr: float = 3e-3
    #: (vocabulary ids, port fields) where the encoding's last columns are port ids (``PortVocab``)
    ports: tuple[int, int] | None = None


@dataclass
class Fit:
    """A trained model's test predictions, measured size, validation macro-F1 and how its training ended."""

    pred: np.ndarray
    model_bits: int
    val_f1: float
    epochs_run: int
    stopped_by: str


def fit_predict(name: str, x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray,
                x_te: np.ndarray, n_classes: int, seed: int, ts: TrainSettings) -> Fit:
    """Train on (x_tr, y_tr) with balanced class weights; keep the epoch with the best validation macro-F1 and
    stop ``patience`` epochs after it (or at the cap, which the result says). Single-threaded, as Chimera's
    training: multi-threaded float reductions would make the result depend on thread scheduling."""
    with single_threaded():
        return _fit_predict(name, x_tr, y_tr, x_va, y_va, x_te, n_classes, seed, ts)


def _fit_predict(name: str, x_tr: np.ndarray, y_tr: np.ndarray, x_va: np.ndarray, y_va: np.ndarray,
                 x_te: np.ndarray, n_classes: int, seed: int, ts: TrainSettings) -> Fit:
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = build(name, x_tr.shape[1], n_classes, x_tr.shape[2], ts.ports)
    counts = np.bincount(y_tr, minlength=n_classes).astype(np.float64)
    w = torch.tensor(np.where(counts > 0, counts.sum() / np.maximum(counts, 1) / n_classes, 0.0), dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=ts.lr)
    loss_fn = nn.CrossEntropyLoss(weight=w)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr.astype(np.int64))
    best, best_state, stale, epochs, patience_hit = -1.0, None, 0, 0, False
    for _ in range(ts.epochs):
        epochs += 1
        model.train()
        order = rng.permutation(len(xt))
        for i in range(0, len(order), ts.batch_size):
            b = order[i:i + ts.batch_size]
            if len(b) < 2:
                continue
            opt.zero_grad()
            loss_fn(model(xt[b]), yt[b]).backward()
            opt.step()
        f1 = macro_f1(y_va, predict(model, x_va))
        if f1 > best:
            best, best_state, stale = f1, {k: v.clone() for k, v in model.state_dict().items()}, 0
        else:
            stale += 1
            if stale >= ts.patience:
                patience_hit = True
                break
    assert best_state is not None
    model.load_state_dict(best_state)
    return Fit(predict(model, x_te), model_bits(model), best, epochs, "patience" if patience_hit else "cap")


@torch.no_grad()
def predict(model: nn.Module, x: np.ndarray, batch: int = 8192) -> np.ndarray:
    model.eval()
    out = [model(torch.from_numpy(x[i:i + batch])).argmax(1).numpy() for i in range(0, len(x), batch)]
    return np.concatenate(out) if out else np.zeros(0, np.int64)
