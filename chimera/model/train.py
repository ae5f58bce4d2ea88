"""Training (PyTorch, CPU) of the centroid-token linearized-attention classifier.

Keys, values and queries depend only on centroid ids, so for any token the
attention output is

    s_nn,y = sum_c n_c K[q, c] U[c, y] / sum_c n_c K[q, c]

where n_c counts key centroid c among the attended tokens (the local window,
the global tokens of the packet's protocol class, or the whole flow prefix for
"dense"), K[q, c] = phi(q_q) . phi(k_c) is the kernel and U[c, y] = w_y . v_c
the class head applied to values. Every variant of the ablation is the same
computation with different counts and kernels, which is also exactly what the
compiled tables hold.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from chimera.data.flows import Flows
from chimera.data.tokens import PROTO_CLASSES, Tokens, proto_class
from chimera.metrics.classification import macro_f1
from chimera.model.config import ModelConfig
from chimera.model.tokenizer import MapTables

log = logging.getLogger(__name__)

KERNEL_FLOOR = 1e-6  # RFF kernel estimates can be <= 0; clamped so Z > 0 (as the integer pipeline does)


@dataclass
class Contexts:
    """What the classifier sees for each token (rows = eligible packets)."""

    rows: np.ndarray      # packet row in the table
    q: np.ndarray         # query centroid id
    pclass: np.ndarray    # protocol class
    counts: np.ndarray    # float32 [N, C]: attended key centroids (window / prefix / none)


def window_counts(c: np.ndarray, flow: np.ndarray, pos: np.ndarray, n_centroids: int, window: int | None) -> np.ndarray:
    """Counts of centroid ids among the last ``window`` tokens of the same flow (None = whole prefix).

    Rows must be in capture order; ``pos`` is the token's index within its flow's eligible tokens.
    """
    n = c.shape[0]
    out = np.zeros((n, n_centroids), np.float32)
    if n == 0:
        return out
    order = np.lexsort((pos, flow))
    cs, fs = c[order], flow[order]
    onehot = np.zeros((n, n_centroids), np.int32)
    onehot[np.arange(n), cs] = 1
    cumz = np.vstack([np.zeros((1, n_centroids), np.int64), np.cumsum(onehot, axis=0)])  # cumz[i] = sum of rows < i
    start = np.r_[0, np.flatnonzero(fs[1:] != fs[:-1]) + 1]
    grp_start = np.repeat(start, np.diff(np.r_[start, n]))
    i1 = np.arange(1, n + 1)
    lo = grp_start if window is None else np.maximum(i1 - window, grp_start)
    within = cumz[i1] - cumz[lo]
    out[order] = within
    return out


def build_contexts(tokens: Tokens, flows: Flows, mp: MapTables, cfg: ModelConfig, rows: np.ndarray) -> Contexts:
    """Contexts of packets ``rows`` (eligible, in capture order) using offline flows."""
    sub = Tokens(*(getattr(tokens, f)[rows] for f in ("ip_len", "iat_bucket", "direction", "tcp_flags", "proto")))
    q = mp.centroids(sub)
    fl = flows.flow_id[rows]
    pos = flows.pkt_index[rows]
    if cfg.keys == "global":
        counts = np.zeros((rows.size, cfg.centroids), np.float32)
    else:
        counts = window_counts(q, fl, pos, cfg.centroids, None if cfg.keys == "dense" else cfg.window)
    return Contexts(rows, q, proto_class(sub.proto).astype(np.int64), counts)


def select_global_tokens(q: np.ndarray, pclass: np.ndarray, n_global: int, n_centroids: int) -> np.ndarray:
    """Preselected global tokens: the most frequent centroids per protocol class (-1 = unused)."""
    g = np.full((PROTO_CLASSES, max(n_global, 0)), -1, np.int64)
    for p in range(PROTO_CLASSES):
        cnt = np.bincount(q[pclass == p], minlength=n_centroids)
        if n_global and cnt.sum():
            top = np.argsort(-cnt, kind="stable")[:n_global]
            top = top[cnt[top] > 0]
            g[p, : top.size] = top
    return g


def global_counts(g: np.ndarray, n_centroids: int) -> np.ndarray:
    """[PROTO_CLASSES, C] counts of global tokens per protocol class."""
    out = np.zeros((g.shape[0], n_centroids), np.float32)
    for p in range(g.shape[0]):
        for c in g[p]:
            if c >= 0:
                out[p, c] += 1
    return out


class AttentionClassifier(torch.nn.Module):
    """Embeddings -> q, k, v -> kernel over centroids -> class head."""

    def __init__(self, cfg: ModelConfig, n_classes: int, seed: int) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        C, d = cfg.centroids, cfg.d_model
        self.cfg = cfg
        self.emb = torch.nn.Parameter(torch.randn(C, d, generator=gen) * 0.5)
        self.wq = torch.nn.Parameter(torch.randn(d, cfg.d_k, generator=gen) / d**0.5)
        self.wk = torch.nn.Parameter(torch.randn(d, cfg.d_k, generator=gen) / d**0.5)
        self.wv = torch.nn.Parameter(torch.randn(d, cfg.d_v, generator=gen) / d**0.5)
        self.wo = torch.nn.Parameter(torch.randn(cfg.d_v, n_classes, generator=gen) / cfg.d_v**0.5)
        m = cfg.features if cfg.attention == "prf" else max(cfg.features // 2, 1)
        self.register_buffer("omega", torch.randn(m, cfg.d_k, generator=gen))

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """Random feature map of queries/keys [C, d_k] -> [C, m]."""
        x = x / self.cfg.d_k**0.25
        proj = x @ self.omega.T
        sq = (x * x).sum(-1, keepdim=True) / 2
        m = self.cfg.features
        if self.cfg.attention == "prf":
            return torch.exp(proj - sq) / m**0.5
        # rff: trigonometric features of the softmax kernel (Performer's "trig" estimator)
        return torch.exp(sq) * torch.cat([torch.sin(proj), torch.cos(proj)], -1) / (m // 2) ** 0.5

    def tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(K [C, C] kernel q x key, U [C, Y] class head applied to values)."""
        q, k = self.emb @ self.wq, self.emb @ self.wk
        if self.cfg.attention == "softmax":
            kern = torch.exp((q @ k.T) / self.cfg.d_k**0.5)
        else:
            kern = self.phi(q) @ self.phi(k).T
        kern = torch.clamp(kern, min=KERNEL_FLOOR)
        return kern, (self.emb @ self.wv) @ self.wo

    def forward(self, q: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        kern, u = self.tables()
        w = counts * kern[q]
        return (w @ u) / w.sum(-1, keepdim=True).clamp_min(KERNEL_FLOOR)


@dataclass
class TrainedModel:
    """Float model + the tokenizer it was trained with; everything compile needs."""

    config: ModelConfig
    classes: list[str]
    map: MapTables
    global_tokens: np.ndarray          # [PROTO_CLASSES, n_global]
    kernel: np.ndarray                 # [C, C]
    head: np.ndarray                   # U [C, Y]
    phi_q: np.ndarray | None           # [C, m] (random-feature kernels only)
    phi_k: np.ndarray | None
    values: np.ndarray                 # [C, d_v]
    w_out: np.ndarray                  # [d_v, Y]
    val_f1: float = float("nan")

    def counts_with_global(self, ctx: Contexts) -> np.ndarray:
        cnt = ctx.counts if self.config.uses_window else np.zeros_like(ctx.counts)
        if self.config.uses_global:
            cnt = cnt + global_counts(self.global_tokens, self.config.centroids)[ctx.pclass]
        return cnt

    def scores(self, ctx: Contexts) -> np.ndarray:
        """s_nn [N, Y] in float (the software classifier)."""
        w = self.counts_with_global(ctx) * self.kernel[ctx.q]
        z = np.maximum(w.sum(1, keepdims=True), KERNEL_FLOOR)
        return (w @ self.head) / z


def train(cfg: ModelConfig, classes: list[str], mp: MapTables, train_ctx: Contexts, y_train: np.ndarray,
          val_ctx: Contexts | None, y_val: np.ndarray | None, seed: int) -> TrainedModel:
    """Fit the classifier; keeps the epoch with the best validation macro-F1.

    Runs single-threaded: the model is tiny, and multi-threaded float reductions
    are not bit-reproducible, which would make the compiled tables depend on
    thread scheduling instead of only on the seed.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(cfg, classes, mp, train_ctx, y_train, val_ctx, y_val, seed)
    finally:
        torch.set_num_threads(threads)


def _train(cfg: ModelConfig, classes: list[str], mp: MapTables, train_ctx: Contexts, y_train: np.ndarray,
           val_ctx: Contexts | None, y_val: np.ndarray | None, seed: int) -> TrainedModel:
    torch.manual_seed(seed)
    n_cls = len(classes)
    g = select_global_tokens(train_ctx.q, train_ctx.pclass, cfg.n_global, cfg.centroids)
    model = AttentionClassifier(cfg, n_cls, seed)
    gc = torch.from_numpy(global_counts(g, cfg.centroids))

    def counts_of(ctx: Contexts) -> torch.Tensor:
        cnt = torch.from_numpy(ctx.counts) if cfg.uses_window else torch.zeros(len(ctx.q), cfg.centroids)
        if cfg.uses_global:
            cnt = cnt + gc[torch.from_numpy(ctx.pclass)]
        return cnt

    cnt_tr, q_tr = counts_of(train_ctx), torch.from_numpy(train_ctx.q)
    yt = torch.from_numpy(y_train.astype(np.int64))
    freq = np.bincount(y_train, minlength=n_cls).astype(np.float64)
    w = np.where(freq > 0, (freq.sum() / np.maximum(freq, 1) / n_cls) ** cfg.class_weight_power, 0.0)
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(w, dtype=torch.float32))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    n = len(yt)
    gen = torch.Generator().manual_seed(seed)
    best: tuple[float, dict[str, torch.Tensor]] = (-1.0, {k: v.clone() for k, v in model.state_dict().items()})
    cnt_val = counts_of(val_ctx) if val_ctx is not None else None
    for epoch in tqdm(range(cfg.epochs), desc=f"train {cfg.attention}/{cfg.keys}", unit="epoch", leave=False):
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, cfg.batch_size):
            b = perm[i:i + cfg.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(q_tr[b], cnt_tr[b]), yt[b])
            loss.backward()
            opt.step()
        if cnt_val is not None and y_val is not None and len(y_val):
            with torch.no_grad():
                pv = model(torch.from_numpy(val_ctx.q), cnt_val).argmax(1).numpy()  # type: ignore[union-attr]
            f1 = macro_f1(y_val, pv)
            log.debug("epoch %d: loss %.4f val macro-F1 %.4f", epoch, loss.item(), f1)
            if f1 > best[0]:
                best = (f1, {k: v.clone() for k, v in model.state_dict().items()})
    if cnt_val is not None and best[0] >= 0:
        model.load_state_dict(best[1])
    with torch.no_grad():
        kern, u = model.tables()
        qk = model.emb @ model.wq, model.emb @ model.wk
        rf = cfg.attention != "softmax"
        return TrainedModel(
            config=cfg, classes=list(classes), map=mp, global_tokens=g, kernel=kern.numpy().astype(np.float64),
            head=u.numpy().astype(np.float64),
            phi_q=model.phi(qk[0]).numpy().astype(np.float64) if rf else None,
            phi_k=model.phi(qk[1]).numpy().astype(np.float64) if rf else None,
            values=(model.emb @ model.wv).numpy().astype(np.float64), w_out=model.wo.numpy().astype(np.float64),
            val_f1=best[0])
