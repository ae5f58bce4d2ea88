"""Offline weight learning for soft rules: a hinge-loss MRF over rule groundings.

Each soft rule r and class y form a grounded implication "r fires => class y"
with a non-negative weight W[r, y] (as in a hinge-loss Markov random field,
whose potentials are hinges with non-negative weights). The symbolic score of
a packet is s_sym,y = sum_r W[r, y] * fires_r. Weights are learned by
minimizing the structured hinge loss

    mean_i  w_i * max_y ( [y != y_i] + s_sym,y(x_i) - s_sym,y_i(x_i) )  + lam * |W|^2

with projected (W >= 0) Adam. For this rule structure MAP inference is an
argmax, so this is the max-margin HL-MRF weight learning objective. It is
evaluated over the distinct (fired rules, label) pairs weighted by their counts:
the same mean, in time independent of the number of packets.
"""

from __future__ import annotations

import numpy as np
import torch

from chimera.determinism import single_threaded


def learn_soft_weights(fires: np.ndarray, y: np.ndarray, n_classes: int, *, seed: int, epochs: int = 200,
                       lam: float = 1e-3, class_weight_power: float = 0.5) -> np.ndarray:
    """W [R, Y] >= 0 from rule firings [N, R] (bool) and labels [N]; single-threaded, as the model's training."""
    with single_threaded():
        return _learn(fires, y, n_classes, seed=seed, epochs=epochs, lam=lam, class_weight_power=class_weight_power)


def _learn(fires: np.ndarray, y: np.ndarray, n_classes: int, *, seed: int, epochs: int, lam: float,
           class_weight_power: float) -> np.ndarray:
    n_rules = fires.shape[1]
    if n_rules == 0 or fires.shape[0] == 0:
        return np.zeros((n_rules, n_classes))
    torch.manual_seed(seed)
    # The objective depends on a packet only through (which rules fire, its label): the mean over packets is
    # the count-weighted mean over the distinct pairs, a few hundred rows however many packets there are.
    freq = np.bincount(y, minlength=n_classes).astype(np.float64)
    cw = np.where(freq > 0, (freq.sum() / np.maximum(freq, 1) / n_classes) ** class_weight_power, 0.0)
    if n_rules < 56:  # one integer per (pattern, label): a 1-D unique
        bits = fires.astype(np.int64) @ (np.int64(1) << np.arange(n_rules, dtype=np.int64))
        keys, counts = np.unique(bits * n_classes + y, return_counts=True)
        pat, lab = keys // n_classes, keys % n_classes
        patterns = ((pat[:, None] >> np.arange(n_rules)) & 1).astype(np.float32)
    else:
        rows, counts = np.unique(np.column_stack([fires.astype(np.int64), y]), axis=0, return_counts=True)
        patterns, lab = rows[:, :n_rules].astype(np.float32), rows[:, n_rules]
    f = torch.from_numpy(patterns)
    yt = torch.from_numpy(lab.astype(np.int64))
    sw = torch.tensor(cw[lab] * counts / counts.sum() * len(counts), dtype=torch.float32)
    w = torch.zeros(n_rules, n_classes, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.05)
    delta = 1.0 - torch.nn.functional.one_hot(yt, n_classes).float()
    for _ in range(epochs):
        opt.zero_grad()
        s = f @ w
        s_true = s.gather(1, yt[:, None])
        loss = (sw * (delta + s - s_true).max(1).values).mean() + lam * (w * w).sum()
        loss.backward()
        opt.step()
        with torch.no_grad():
            w.clamp_(min=0.0)
    return w.detach().numpy().astype(np.float64)
