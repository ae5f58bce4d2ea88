"""Offline weight learning for soft rules: a hinge-loss MRF over rule groundings.

Each soft rule r and class y form a grounded implication "r fires => class y"
with a non-negative weight W[r, y] (as in a hinge-loss Markov random field,
whose potentials are hinges with non-negative weights). The symbolic score of
a packet is s_sym,y = sum_r W[r, y] * fires_r. Weights are learned by
minimizing the structured hinge loss

    mean_i  w_i * max_y ( [y != y_i] + s_sym,y(x_i) - s_sym,y_i(x_i) )  + lam * |W|^2

with projected (W >= 0) Adam. For this rule structure MAP inference is an
argmax, so this is the max-margin HL-MRF weight learning objective.
"""

from __future__ import annotations

import numpy as np
import torch


def learn_soft_weights(fires: np.ndarray, y: np.ndarray, n_classes: int, *, seed: int, epochs: int = 200,
                       lam: float = 1e-3, class_weight_power: float = 0.5) -> np.ndarray:
    """W [R, Y] >= 0 from rule firings [N, R] (bool) and labels [N]."""
    n_rules = fires.shape[1]
    if n_rules == 0 or fires.shape[0] == 0:
        return np.zeros((n_rules, n_classes))
    torch.manual_seed(seed)
    f = torch.from_numpy(fires.astype(np.float32))
    yt = torch.from_numpy(y.astype(np.int64))
    freq = np.bincount(y, minlength=n_classes).astype(np.float64)
    cw = np.where(freq > 0, (freq.sum() / np.maximum(freq, 1) / n_classes) ** class_weight_power, 0.0)
    sw = torch.tensor(cw, dtype=torch.float32)[yt]
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
