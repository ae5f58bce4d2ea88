"""What every kind's figures share: the Agg backend, and saving a figure as PNG and PDF (each kind draws its own
figures in its render.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

__all__ = ["plt", "save", "sns"]


def save(fig: plt.Figure, out: Path, name: str) -> list[Path]:
    """``fig`` as ``out/name.png`` and ``out/name.pdf``, closed afterwards."""
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths
