"""A fingerprint of this machine's floats: the bits a tiny fixed training step and a few vectorized kernels give.

Same code, data and seed trained different bits on two of this project's hosts (session 26: one ablation row kept
another learning rate on a validation margin of 0.0001), although the package pins torch's, MKL's and oneDNN's
vector dispatch (chimera/__init__.py; since then OpenBLAS's and numpy's too). So a golden's bit-identical F1 holds
only on the floats it was taken on. The night records this probe beside the golden; where the golden's differs
from tonight's, the bit-identical checks say so instead of reporting a regression the code did not make (the F1
tolerance check still judges). Equal probes do not prove equal floats for every kernel a run uses; different probes
prove different floats.
"""

from __future__ import annotations

import hashlib


def float_probe() -> str:
    """16 hex digits of the probe's bits: 20 Adam steps of a small MLP (matmuls, ReLU, softmax cross-entropy,
    backward) on fixed data, torch's vectorized transcendental kernels, numpy's reductions and a matrix product
    (OpenBLAS's kernel); one thread, the caller's random state untouched."""
    import numpy as np
    import torch

    from chimera.determinism import single_threaded
    h = hashlib.sha256()
    with single_threaded(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        x, y = torch.randn(512, 24), torch.randint(0, 6, (512,))
        model = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.ReLU(), torch.nn.Linear(32, 6))
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        for _ in range(20):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        for p in model.parameters():
            h.update(p.detach().numpy().tobytes())
        v = torch.linspace(-20, 20, 4099)
        for f in (torch.sin, torch.cos, torch.exp, torch.tanh):
            h.update(f(v / 4).numpy().tobytes())
        h.update(torch.log1p(v.abs()).numpy().tobytes())
    a = np.random.default_rng(0).standard_normal(100_003)
    h.update(np.array([a.sum(), np.exp(a / 10).sum(), a @ a, np.sin(a).sum()]).tobytes())
    m = a[:90_000].reshape(300, 300)   # a matrix product: OpenBLAS's GEMM kernel sums in its own order
    h.update((m @ m.T).tobytes())
    return h.hexdigest()[:16]
