"""Anomaly detectors trained on benign flows only: an integer AutoEncoder from Chimera's primitives, a float
AutoEncoder, and a simple threshold.

Integer AutoEncoder (``TableAutoEncoder``): each packet of the window is tokenized
the way Chimera's Map stage does (coarse length bin from a range table, IAT
bucket, direction, TCP flag class). The encoder picks a latent code k of K; the
decoder is, per code, a categorical distribution of every (lag, field). Both
halves are table lookups: the reconstruction cost of code k is
``SumReduce over (lag, field) of Q[lag, field][value, k]``, Q the 8-bit integer
-log2 probability at 1/16 bit; the encoder takes the code of least cost, and the
anomaly score is that cost less the benign median cost of windows with as many
packets present (one more lookup). Trained by EM on benign windows (a
latent-class model, the discrete form of an autoencoder). Every operation at
scoring time is an exact lookup, an integer add or a min: it maps onto switch
tables as Chimera's SumReduce does.

Float AutoEncoder: an MLP 180-32-8-32-180 on the baselines' float encoding,
reconstruction MSE as the score, calibrated by the packets present the same way,
so that the comparison is about the model, not the calibration. Threshold: the
largest z-score of the current packet's fields against benign training
statistics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from chimera.baselines.features import MISSING, WindowSpec
from chimera.determinism import single_threaded
from chimera.model.tokenizer import FLAG_CLASSES, LEN_BINS, flag_class, len_bin, quantile_edges

FIELDS = ("len_bin", "iat_bucket", "direction", "flag_class")
VOCAB = {"len_bin": LEN_BINS + 1, "iat_bucket": 17, "direction": 3, "flag_class": FLAG_CLASSES + 1}  # +1: absent
COST_BITS = 8
COST_SCALE = 16  # Q = round(16 * -log2 p), i.e. 1/16 bit resolution, clipped to 255


def discretize(x: np.ndarray, spec: WindowSpec, len_lo: np.ndarray) -> np.ndarray:
    """[N, window, 4] int64 token fields per lag (lag 0 first); the last value of each vocabulary = absent."""
    n, L, nf = x.shape[0], spec.window, len(spec.fields)
    lag = x[:, : L * nf].reshape(n, L, nf)
    idx = {f: i for i, f in enumerate(spec.fields)}
    present = lag[..., 0] != MISSING
    out = np.empty((n, L, len(FIELDS)), np.int64)
    lens = np.where(present, lag[..., idx["ip_len"]], 0)
    out[..., 0] = np.where(present, len_bin(lens.reshape(-1), len_lo).reshape(n, L), LEN_BINS)
    out[..., 1] = np.where(present, np.clip(lag[..., idx["iat_bucket"]], 0, 15), 16)
    out[..., 2] = np.where(present, lag[..., idx["direction"]], 2)
    fl = np.where(present, lag[..., idx["tcp_flags"]], 0).astype(np.uint8)
    out[..., 3] = np.where(present, flag_class(fl.reshape(-1)).reshape(n, L), FLAG_CLASSES)
    return out


def present_count(x: np.ndarray, spec: WindowSpec) -> np.ndarray:
    """Packets of the window that exist (the flow's position, capped at the window)."""
    nf = len(spec.fields)
    return (x[:, : spec.window * nf].reshape(len(x), spec.window, nf)[..., 0] != MISSING).sum(1)


def benign_offsets(scores: np.ndarray, present: np.ndarray, window: int) -> np.ndarray:
    """Median benign score per present count (0 where no benign window has that count)."""
    out = np.zeros(window + 1, scores.dtype if scores.dtype.kind == "f" else np.int64)
    for n in range(window + 1):
        m = present == n
        if m.any():
            out[n] = np.median(scores[m]) if scores.dtype.kind == "f" else int(np.median(scores[m]))
    return out


@dataclass
class TableAutoEncoder:
    """Integer tables: len range table, Q[lag][field] of [vocab, K] 8-bit costs, a per-code bias."""

    len_lo: np.ndarray
    q: list[list[np.ndarray]]   # [lag][field] -> uint8 [vocab, K]
    bias: np.ndarray            # uint8 [K]: -log2 prior of each code
    spec: WindowSpec
    offset: np.ndarray | None = None  # int64 [window + 1]: benign median cost by packets present (a lookup)

    @classmethod
    def fit(cls, x_benign: np.ndarray, spec: WindowSpec, codes: int = 8, iterations: int = 25,
            seed: int = 1) -> "TableAutoEncoder":
        nf = len(spec.fields)
        lens = x_benign[:, : spec.window * nf][:, spec.fields.index("ip_len")]
        len_lo = quantile_edges(lens[lens != MISSING], LEN_BINS).astype(np.int64)
        d = discretize(x_benign, spec, len_lo)
        n, L, F = d.shape
        rng = np.random.default_rng(seed)
        resp = rng.dirichlet(np.ones(codes), size=n)  # soft code assignments
        for _ in range(iterations):
            pi = resp.mean(0) + 1e-9
            logp = [[np.log((np.stack([np.bincount(d[:, t, f], resp[:, k], VOCAB[FIELDS[f]])
                                       for k in range(codes)], 1) + 0.5)
                            / (resp.sum(0) + 0.5 * VOCAB[FIELDS[f]])) for f in range(F)] for t in range(L)]
            ll = np.log(pi)[None, :] + sum(logp[t][f][d[:, t, f]] for t in range(L) for f in range(F))
            ll -= ll.max(1, keepdims=True)
            resp = np.exp(ll)
            resp /= resp.sum(1, keepdims=True)
        q = [[np.clip(np.rint(-logp[t][f] / np.log(2) * COST_SCALE), 0, 2**COST_BITS - 1).astype(np.uint8)
              for f in range(F)] for t in range(L)]
        bias = np.clip(np.rint(-np.log2(pi) * COST_SCALE), 0, 2**COST_BITS - 1).astype(np.uint8)
        ae = cls(len_lo, q, bias, spec)
        ae.offset = benign_offsets(ae.raw_score(x_benign), present_count(x_benign, spec), spec.window)
        return ae

    def raw_score(self, x: np.ndarray) -> np.ndarray:
        """Min over codes of bias + SumReduce of the (lag, field) cost lookups (integer)."""
        d = discretize(x, self.spec, self.len_lo)
        total = np.broadcast_to(self.bias.astype(np.int64), (len(x), self.bias.size)).copy()
        for t, per_lag in enumerate(self.q):
            for f, table in enumerate(per_lag):
                total += table[d[:, t, f]].astype(np.int64)
        return total.min(1)

    def score(self, x: np.ndarray) -> np.ndarray:
        """The anomaly score: the raw cost less the benign median for windows with as many packets (one more
        lookup and a subtraction). Without it, a flow's first packets (mostly absent lags, cheap to
        reconstruct) would look normal whatever they are, and every longer benign flow anomalous."""
        assert self.offset is not None
        return self.raw_score(x) - self.offset[present_count(x, self.spec)]

    def resources(self) -> dict[str, int]:
        k = self.bias.size
        entries = sum(t.shape[0] for lag in self.q for t in lag)
        return {"table_entries": entries + LEN_BINS, "exact_bits": entries * (8 + k * COST_BITS),
                "ternary_range_bits": LEN_BINS * 2 * 16, "action_data_bits": k * COST_BITS,
                "model_bits": entries * k * COST_BITS + k * COST_BITS + LEN_BINS * 16}

    def per_flow_bits(self) -> int:
        """Earlier packets' token fields (len bin 4 + IAT 4 + dir 1 + flag class 3 bits) per stored lag."""
        return (self.spec.window - 1) * (4 + 4 + 1 + 3)


class _AE(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 8), nn.ReLU(), nn.Linear(8, 32),
                                 nn.ReLU(), nn.Linear(32, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@dataclass
class FloatAutoEncoder:
    model: _AE
    offset: np.ndarray | None = None  # benign median error by packets present (as the table AutoEncoder)
    epochs_run: int = 0
    stopped_by: str = "cap"
    val_f1: float = float("nan")

    @classmethod
    def fit(cls, enc_benign: np.ndarray, seed: int = 1, epochs: int = 10, batch: int = 512, lr: float = 3e-3,
            val: tuple[np.ndarray, np.ndarray] | None = None, patience: int = 0,
            quantile: float = 0.99) -> "FloatAutoEncoder":
        """Train on benign windows. With ``val`` (validation windows, and which are attacks) and ``patience``:
        after each epoch, threshold at the benign validation windows' score ``quantile`` and score
        benign-vs-attack macro-F1 on validation; keep the best epoch and stop ``patience`` epochs after it (the
        comparison's early stopping, on the metric every method is chosen by). Else train ``epochs`` epochs.
        Single-threaded, as every trained model here (chimera.determinism)."""
        with single_threaded():
            return cls._fit(enc_benign, seed, epochs, batch, lr, val, patience, quantile)

    @classmethod
    def _fit(cls, enc_benign: np.ndarray, seed: int, epochs: int, batch: int, lr: float,
             val: tuple[np.ndarray, np.ndarray] | None, patience: int, quantile: float) -> "FloatAutoEncoder":
        from chimera.metrics.classification import macro_f1
        torch.manual_seed(seed)
        x = torch.from_numpy(enc_benign.reshape(len(enc_benign), -1))
        m = _AE(x.shape[1])
        opt = torch.optim.Adam(m.parameters(), lr=lr)
        rng = np.random.default_rng(seed)
        best, best_state, stale, run, why = -1.0, None, 0, 0, "cap"
        for _ in range(epochs):
            run += 1
            m.train()
            for i in range(0, len(x), batch):
                b = torch.from_numpy(rng.integers(0, len(x), min(batch, len(x))))
                opt.zero_grad()
                ((m(x[b]) - x[b]) ** 2).mean().backward()
                opt.step()
            if val is None or not patience:
                continue
            ae = cls(m).calibrate(enc_benign)
            f1 = macro_f1(val[1].astype(np.int64), (ae.score(val[0]) > ae.threshold(val[0][~val[1]], quantile))
                          .astype(np.int64))
            if f1 > best:
                best, best_state, stale = f1, {k: v.clone() for k, v in m.state_dict().items()}, 0
            else:
                stale += 1
                if stale >= patience:
                    why = "patience"
                    break
        if best_state is not None:
            m.load_state_dict(best_state)
        return cls(m, epochs_run=run, stopped_by=why, val_f1=best).calibrate(enc_benign)

    def threshold(self, enc_benign: np.ndarray, quantile: float) -> float:
        """The score above which a window is an attack: the ``quantile`` of these benign windows' scores."""
        return float(np.quantile(self.score(enc_benign), quantile)) if len(enc_benign) else float("inf")

    @torch.no_grad()
    def raw_score(self, enc: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(enc.reshape(len(enc), -1))
        self.model.eval()
        return ((self.model(x) - x) ** 2).mean(1).numpy()

    def calibrate(self, enc_benign: np.ndarray) -> "FloatAutoEncoder":
        present = enc_benign[..., 0].sum(1).astype(np.int64)
        self.offset = benign_offsets(self.raw_score(enc_benign), present, enc_benign.shape[1])
        return self

    def score(self, enc: np.ndarray) -> np.ndarray:
        s = self.raw_score(enc)
        if self.offset is None:
            return s
        return s - self.offset[enc[..., 0].sum(1).astype(np.int64)]

    def model_bits(self) -> int:
        return 32 * sum(p.numel() for p in self.model.parameters())


@dataclass
class ZThreshold:
    mean: np.ndarray
    std: np.ndarray
    cols: np.ndarray

    @classmethod
    def fit(cls, x_benign: np.ndarray, spec: WindowSpec) -> "ZThreshold":
        nf = len(spec.fields)
        cols = np.r_[np.arange(nf), np.arange(spec.window * nf, x_benign.shape[1])]  # the current packet's fields
        v = x_benign[:, cols].astype(np.float64)
        return cls(v.mean(0), v.std(0) + 1e-9, cols)

    def score(self, x: np.ndarray) -> np.ndarray:
        return np.abs((x[:, self.cols] - self.mean) / self.std).max(1)
