"""Training (PyTorch, CPU) of the linearized-attention classifier over partitioned tokens.

For a query packet t with centroid q, the attended tokens i (the flow's last
``window`` packets, this one included; the global tokens of t's protocol class;
or the whole flow prefix for "dense") give

    s_nn,y(t) = ( sum_i K[q, c_i] u_i,y + G[q, p, y] ) / ( sum_i K[q, c_i] + Gz[q, p] )

with K[q, c] = phi(W_q e_q) . phi(W_k e_c) (positive random features, m of
them; or random Fourier features, or the exact softmax kernel), and the value
of token i the SumReduce of its five sub-tokens' embeddings, projected on the
classes: u_i = (V_len[s0] + V_iat[s1] + V_flags[s2] + V_port[s3] + V_index[s4]) W_out.
Global tokens are learned (a key embedding and a value per token and protocol
class). The compiled integer pipeline computes exactly this, division-free and
incrementally (docs/pipeline.md).

Training minimizes class-balanced cross-entropy and keeps the epoch with the
best validation macro-F1 (early stopping), so it optimizes what is reported.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from chimera.data.flows import Flows
from chimera.data.pcap import PacketTable
from chimera.data.tokens import PROTO_CLASSES, Tokens, proto_class
from chimera.determinism import single_threaded
from chimera.errors import ConfigError
from chimera.metrics.classification import macro_f1
from chimera.model.config import ModelConfig
from chimera.model.tokenizer import SUB_TOKENS, MapTables

log = logging.getLogger(__name__)

KERNEL_FLOOR = 1e-6  # RFF kernel estimates can be <= 0; clamped so Z > 0 (as the integer pipeline does)


@dataclass
class TokenView:
    """Per-packet token ids of a whole packet table: centroid and the five value sub-tokens."""

    centroid: np.ndarray   # int64 [N]
    sub: np.ndarray        # int64 [N, 5]
    pclass: np.ndarray     # int64 [N]


def token_view(table: PacketTable, tokens: Tokens, flows: Flows, mp: MapTables) -> TokenView:
    return TokenView(mp.centroids(tokens), mp.sub_tokens(tokens, table.sport, table.dport, flows.pkt_index + 1),
                     proto_class(tokens.proto).astype(np.int64))


@dataclass
class Contexts:
    """What the classifier sees for each query token (rows = eligible packets, grouped by flow)."""

    rows: np.ndarray      # packet rows in the table, in the order of ``order`` below
    window: np.ndarray    # int64 [N, L]: table rows of the attended tokens (0 = newest = the row itself), -1 pad
    flow_start: np.ndarray  # int64 [N]: position (in rows) of the flow's first token (for dense prefixes)
    order: np.ndarray     # positions of ``rows`` in the caller's row order (to map predictions back)


def build_contexts(flows: Flows, rows: np.ndarray, window: int) -> Contexts:
    """Contexts of packets ``rows`` (complete flows); windows hold the last ``window`` packets of each flow."""
    rows = np.asarray(rows, np.int64)
    order = np.lexsort((flows.pkt_index[rows], flows.flow_id[rows]))
    r = rows[order]
    fid = flows.flow_id[r]
    start = np.r_[True, fid[1:] != fid[:-1]] if r.size else np.zeros(0, bool)
    flow_start = np.maximum.accumulate(np.where(start, np.arange(r.size), 0)) if r.size else np.zeros(0, np.int64)
    pos = np.arange(r.size)
    win = np.full((r.size, window), -1, np.int64)
    for k in range(window):
        src = pos - k
        ok = src >= flow_start
        win[:, k] = np.where(ok, r[np.maximum(src, 0)], -1)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    return Contexts(r, win, flow_start.astype(np.int64), inv)


class AttentionClassifier(torch.nn.Module):
    """Centroid embeddings -> q, k -> kernel; sub-token embeddings -> values -> class head."""

    def __init__(self, cfg: ModelConfig, n_classes: int, sizes: tuple[int, ...], seed: int,
                 recency: bool = False) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        C, d = cfg.centroids, cfg.d_model
        self.cfg = cfg

        def param(*shape: int, scale: float) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.randn(*shape, generator=gen) * scale)

        self.emb = param(C, d, scale=0.5)
        self.wq = param(d, cfg.d_k, scale=d ** -0.5)
        self.wk = param(d, cfg.d_k, scale=d ** -0.5)
        self.values = torch.nn.ParameterList([param(n, cfg.d_v, scale=0.1) for n in sizes])
        self.wo = param(cfg.d_v, n_classes, scale=cfg.d_v ** -0.5)
        ng = max(cfg.n_global, 1)
        self.g_key = param(PROTO_CLASSES, ng, d, scale=0.5)
        self.g_value = param(PROTO_CLASSES, ng, cfg.d_v, scale=0.1)
        m = cfg.features if cfg.attention == "prf" else max(cfg.features // 2, 1)
        self.register_buffer("omega", torch.randn(m, cfg.d_k, generator=gen))
        # the recency term (measured offline, docs/fidelity.md): a learned geometric decay of the attention
        # weight with the token's age in the window, rho^lag, rho = exp(-softplus(r)); one parameter, and the
        # form an incremental accumulator could carry (multiply by rho per packet)
        self.recency = torch.nn.Parameter(torch.tensor(-3.0)) if recency else None

    def decay(self, L: int) -> torch.Tensor:
        """[L] recency weights rho^lag (lag 0: the packet itself); ones without the recency term."""
        if self.recency is None:
            return torch.ones(L)
        return torch.exp(-torch.nn.functional.softplus(self.recency) * torch.arange(L, dtype=torch.float32))

    def phi(self, x: torch.Tensor) -> torch.Tensor:
        """Random feature map [..., d_k] -> [..., m]."""
        x = x / self.cfg.d_k ** 0.25
        omega: torch.Tensor = self.omega  # type: ignore[assignment]  # a registered buffer: Tensor | Module to mypy
        proj = x @ omega.T
        sq = (x * x).sum(-1, keepdim=True) / 2
        if self.cfg.attention == "prf":
            return torch.exp(proj - sq) / self.cfg.features ** 0.5
        # rff: trigonometric features of the softmax kernel (Performer's "trig" estimator)
        return torch.exp(sq) * torch.cat([torch.sin(proj), torch.cos(proj)], -1) / (self.cfg.features // 2) ** 0.5

    def kernel_of(self, qe: torch.Tensor, ke: torch.Tensor) -> torch.Tensor:
        """Kernel between query and key embeddings [..., d] (broadcast over leading dims)."""
        q, k = qe @ self.wq, ke @ self.wk
        if self.cfg.attention == "softmax":
            return torch.exp((q * k).sum(-1) / self.cfg.d_k ** 0.5)
        kern = (self.phi(q) * self.phi(k)).sum(-1)
        return torch.clamp(kern, min=KERNEL_FLOOR) if self.cfg.attention == "rff" else kern

    def token_values(self, sub: torch.Tensor) -> torch.Tensor:
        """SumReduce of the sub-token embeddings: [..., 5] ids -> [..., d_v]."""
        out: torch.Tensor = self.values[0][sub[..., 0]]
        for j in range(1, len(SUB_TOKENS)):
            out = out + self.values[j][sub[..., j]]
        return out

    def global_terms(self, q: torch.Tensor, pclass: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(sum_g K u_g [N, Y], sum_g K [N]) over the protocol class's global tokens."""
        if not self.cfg.uses_global:
            z = torch.zeros(q.shape[0])
            return torch.zeros(q.shape[0], self.wo.shape[1]), z
        kg = self.kernel_of(self.emb[q][:, None, :], self.g_key[pclass][:, : self.cfg.n_global])  # [N, ng]
        ug = self.g_value[pclass][:, : self.cfg.n_global] @ self.wo                          # [N, ng, Y]
        return (kg[..., None] * ug).sum(1), kg.sum(1)

    def forward(self, q: torch.Tensor, pclass: torch.Tensor, win_c: torch.Tensor, win_sub: torch.Tensor,
                mask: torch.Tensor, dense: torch.Tensor | None = None) -> torch.Tensor:
        """s_nn [N, Y]. Windowed: win_c/win_sub/mask [N, L]. Dense: prefix sums over the flow (PRF only)."""
        ga, gz = self.global_terms(q, pclass)
        if not self.cfg.uses_window:
            return ga / gz.clamp_min(KERNEL_FLOOR)[:, None]
        if dense is not None:
            phi_q = self.phi(self.emb[q] @ self.wq)                                   # [N, m]
            phi_k = self.phi(self.emb[win_c[:, 0]] @ self.wk)                         # [N, m] (each token itself)
            v = self.token_values(win_sub[:, 0]) @ self.wo                            # [N, Y]
            start = dense  # position of each token's flow start within the batch
            kv = torch.cumsum(phi_k[:, :, None] * v[:, None, :], 0)                   # [N, m, Y]
            kk = torch.cumsum(phi_k, 0)
            before = start - 1
            kv = kv - torch.where((before >= 0)[:, None, None], kv[before.clamp_min(0)], torch.zeros_like(kv))
            kk = kk - torch.where((before >= 0)[:, None], kk[before.clamp_min(0)], torch.zeros_like(kk))
            a = (phi_q[:, :, None] * kv).sum(1)
            z = (phi_q * kk).sum(1)
        else:
            w = self.kernel_of(self.emb[q][:, None, :], self.emb[win_c]) * mask       # [N, L]
            if self.recency is not None:
                w = w * self.decay(win_c.shape[1])
            u = self.token_values(win_sub) @ self.wo                                  # [N, L, Y]
            a = (w[..., None] * u).sum(1)
            z = w.sum(1)
        return (a + ga) / (z + gz).clamp_min(KERNEL_FLOOR)[:, None]


@dataclass
class TrainedModel:
    """The float model and the tokenizer it was trained with: everything compile and the software path need."""

    config: ModelConfig
    classes: list[str]
    map: MapTables
    kernel: np.ndarray                 # [C, C] K[q, c]
    phi_q: np.ndarray | None           # [C, m] (positive random features only: the factorized kernel)
    phi_k: np.ndarray | None
    values: list[np.ndarray]           # five [n_j, d_v] sub-token value tables
    w_out: np.ndarray                  # [d_v, Y]
    global_kernel: np.ndarray          # [C, PROTO_CLASSES, n_global] K[q, g]
    global_phi_k: np.ndarray | None    # [PROTO_CLASSES, n_global, m]
    global_values: np.ndarray          # [PROTO_CLASSES, n_global, d_v]
    val_f1: float = float("nan")
    epochs_run: int = 0
    stopped_by: str = "cap"            # "patience" (early stopping) or "cap" (ran config.epochs)
    decay: np.ndarray | None = None    # [L] recency weights (the offline-only recency term); None: none

    def global_scores(self) -> tuple[np.ndarray, np.ndarray]:
        """(G [C, P, Y], Gz [C, P]) in float."""
        if not self.config.uses_global:
            C = self.config.centroids
            return np.zeros((C, PROTO_CLASSES, self.w_out.shape[1])), np.zeros((C, PROTO_CLASSES))
        ug = self.global_values @ self.w_out                                   # [P, ng, Y]
        return np.einsum("cpg,pgy->cpy", self.global_kernel, ug), self.global_kernel.sum(-1)

    def scores(self, tv: TokenView, ctx: Contexts) -> np.ndarray:
        """s_nn [N, Y] in float for the contexts' rows (in ``ctx.rows`` order)."""
        q = tv.centroid[ctx.rows]
        G, Gz = self.global_scores()
        p = tv.pclass[ctx.rows]
        a, z = G[q, p], Gz[q, p]
        if self.config.uses_window:
            # token values only for the packets some window touches (not the whole table)
            touched = np.unique(ctx.rows if self.config.keys == "dense" else ctx.window[ctx.window >= 0])
            u_t = sum(self.values[j][tv.sub[touched, j]] for j in range(len(SUB_TOKENS))) @ self.w_out
            u_all: np.ndarray | _Compact
            if touched.size * 4 > tv.centroid.shape[0]:
                u_all = np.zeros((tv.centroid.shape[0], u_t.shape[1]))
                u_all[touched] = u_t
            else:  # few rows of a large table: index through a compact map
                u_all = _Compact(touched, u_t)
            if self.config.keys == "dense":  # causal attention over each flow's whole prefix
                a, z = a.copy(), z.copy()
                starts = np.flatnonzero(np.r_[True, ctx.flow_start[1:] != ctx.flow_start[:-1]])
                for s, e in zip(starts, np.r_[starts[1:], ctx.rows.size]):
                    rr = ctx.rows[s:e]
                    k = np.tril(self.kernel[tv.centroid[rr][:, None], tv.centroid[rr][None, :]])
                    a[s:e] += k @ u_all[rr]
                    z[s:e] += k.sum(1)
            else:
                mask = ctx.window >= 0
                wc = tv.centroid[np.maximum(ctx.window, 0)]
                w = self.kernel[q[:, None], wc] * mask
                if self.decay is not None:
                    w = w * self.decay[None, :]
                a = a + np.einsum("nl,nly->ny", w, u_all[np.maximum(ctx.window, 0)])
                z = z + w.sum(1)
        return a / np.maximum(z, KERNEL_FLOOR)[:, None]


class _Compact:
    """Rows of a large per-packet array held only for ``rows`` (indexing with other rows is a bug)."""

    def __init__(self, rows: np.ndarray, values: np.ndarray) -> None:
        self.rows, self.values = rows, values

    def __getitem__(self, idx: np.ndarray) -> np.ndarray:
        return self.values[np.searchsorted(self.rows, idx)]


def _batches(ctx: Contexts, batch_size: int, gen: torch.Generator) -> list[np.ndarray]:
    """Position ranges of whole flows, about ``batch_size`` tokens each, in shuffled flow order."""
    starts = np.flatnonzero(np.r_[True, ctx.flow_start[1:] != ctx.flow_start[:-1]]) if ctx.rows.size else np.zeros(0)
    ends = np.r_[starts[1:], ctx.rows.size]
    perm = torch.randperm(starts.size, generator=gen).numpy()
    out, cur, n = [], [], 0
    for f in perm:
        cur.append(np.arange(starts[f], ends[f]))
        n += ends[f] - starts[f]
        if n >= batch_size:
            out.append(np.concatenate(cur))
            cur, n = [], 0
    if cur:
        out.append(np.concatenate(cur))
    return out


def _inputs(tv: TokenView, ctx: Contexts, sel: np.ndarray | None, dense: bool) -> tuple:
    """Tensors for forward() of the tokens at positions ``sel`` (None = all)."""
    pos = np.arange(ctx.rows.size) if sel is None else sel
    rows = ctx.rows[pos]
    q = torch.from_numpy(tv.centroid[rows])
    p = torch.from_numpy(tv.pclass[rows])
    if dense:  # whole flows are contiguous in ``pos``: prefixes start at the flow's first token in the batch
        fs = ctx.flow_start[pos]
        # where each flow's run begins in this batch (flows come in shuffled order: ``pos`` is not sorted, so
        # no search in it; a run starts wherever the flow changes)
        begins = np.r_[True, fs[1:] != fs[:-1]] if fs.size else np.zeros(0, bool)
        local_start = torch.from_numpy(np.maximum.accumulate(np.where(begins, np.arange(fs.size), 0)))
        win_c = torch.from_numpy(tv.centroid[rows])[:, None]
        win_sub = torch.from_numpy(tv.sub[rows])[:, None, :]
        return q, p, win_c, win_sub, torch.ones(rows.size, 1), local_start
    win = ctx.window[pos]
    mask = win >= 0
    safe = np.maximum(win, 0)
    return (q, p, torch.from_numpy(tv.centroid[safe]), torch.from_numpy(tv.sub[safe]),
            torch.from_numpy(mask.astype(np.float32)), None)


def train(cfg: ModelConfig, classes: list[str], mp: MapTables, tv: TokenView, train_ctx: Contexts, y_train: np.ndarray,
          val_ctx: Contexts | None, y_val: np.ndarray | None, seed: int, recency: bool = False) -> TrainedModel:
    """Fit the classifier; keeps the epoch with the best validation macro-F1 (early stopping).

    Labels are given in the contexts' row order. Runs single-threaded: the model is
    small, and multi-threaded float reductions are not bit-reproducible, which would
    make the compiled tables depend on thread scheduling instead of only on the seed.
    """
    pinned = os.environ.get("ATEN_CPU_CAPABILITY")
    if pinned and torch.backends.cpu.get_cpu_capability().lower() != pinned.lower():
        log.warning("torch runs %s kernels, not the pinned %s (torch was imported before chimera): a seed may not "
                    "reproduce another machine's tables bit for bit", torch.backends.cpu.get_cpu_capability(), pinned)
    with single_threaded():
        return _train(cfg, classes, mp, tv, train_ctx, y_train, val_ctx, y_val, seed, recency)


def _train(cfg: ModelConfig, classes: list[str], mp: MapTables, tv: TokenView, train_ctx: Contexts,
           y_train: np.ndarray, val_ctx: Contexts | None, y_val: np.ndarray | None, seed: int,
           recency: bool = False) -> TrainedModel:
    if recency and (not cfg.uses_window or cfg.keys == "dense"):
        raise ConfigError(f"the recency term weighs a window's tokens by their age, and keys={cfg.keys} has no "
                          "window", "measure it with keys hybrid or local")
    torch.manual_seed(seed)
    n_cls = len(classes)
    dense = cfg.keys == "dense"
    model = AttentionClassifier(cfg, n_cls, mp.sizes, seed, recency)
    yt = torch.from_numpy(y_train.astype(np.int64))
    freq = np.bincount(y_train, minlength=n_cls).astype(np.float64)
    w = np.where(freq > 0, (freq.sum() / np.maximum(freq, 1) / n_cls) ** cfg.class_weight_power, 0.0)
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(w, dtype=torch.float32))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(seed)
    best = (-1.0, {k: v.clone() for k, v in model.state_dict().items()})
    val_in = _inputs(tv, val_ctx, None, dense) if val_ctx is not None and y_val is not None and len(y_val) else None
    stale = epoch = 0
    why = "cap"
    for epoch in tqdm(range(cfg.epochs), desc=f"train {cfg.attention}/{cfg.keys}", unit="epoch", leave=False):
        model.train()
        for sel in _batches(train_ctx, cfg.batch_size, gen):
            opt.zero_grad()
            loss = loss_fn(model(*_inputs(tv, train_ctx, sel, dense)), yt[sel])
            loss.backward()
            opt.step()
        if val_in is None:
            continue
        with torch.no_grad():
            pv = model(*val_in).argmax(1).numpy()
        f1 = macro_f1(y_val, pv)  # type: ignore[arg-type]
        log.debug("epoch %d: loss %.4f val macro-F1 %.4f", epoch, loss.item(), f1)
        if f1 > best[0]:
            best, stale = (f1, {k: v.clone() for k, v in model.state_dict().items()}), 0
        else:
            stale += 1
            if stale >= cfg.patience:
                why = "patience"
                break
    if val_in is not None and best[0] >= 0:
        model.load_state_dict(best[1])
    return _export(model, cfg, classes, mp, best[0], epoch + 1, why)


def _export(model: AttentionClassifier, cfg: ModelConfig, classes: list[str], mp: MapTables, val_f1: float,
            epochs: int, stopped_by: str = "cap") -> TrainedModel:
    with torch.no_grad():
        e = model.emb
        kernel = model.kernel_of(e[:, None, :], e[None, :, :])
        prf = cfg.attention == "prf"
        ng = cfg.n_global
        gk = model.g_key[:, :ng]                                              # [P, ng, d]
        gkern = model.kernel_of(e[:, None, None, :], gk[None]) if ng else torch.zeros(cfg.centroids, PROTO_CLASSES, 0)
        return TrainedModel(
            config=cfg, classes=list(classes), map=mp, kernel=kernel.numpy().astype(np.float64),
            phi_q=model.phi(e @ model.wq).numpy().astype(np.float64) if prf else None,
            phi_k=model.phi(e @ model.wk).numpy().astype(np.float64) if prf else None,
            values=[v.detach().numpy().astype(np.float64) for v in model.values],
            w_out=model.wo.numpy().astype(np.float64),
            global_kernel=gkern.numpy().astype(np.float64),
            global_phi_k=model.phi(gk @ model.wk).numpy().astype(np.float64) if prf else None,
            global_values=model.g_value[:, :ng].numpy().astype(np.float64),
            val_f1=val_f1, epochs_run=epochs, stopped_by=stopped_by,
            decay=model.decay(cfg.window).numpy().astype(np.float64) if model.recency is not None else None)
