"""What every kind's figures share: the Agg backend, and saving a figure as PNG and PDF (each kind draws its own
figures in its render.py).

``plt`` and ``sns`` load matplotlib and seaborn at their first use, not at import: every kind's render module
imports them, so every process that loads the kinds (a Ray worker, a sweep task, a test's subprocess, ``invoke
--list``) paid about 0.8 s for libraries that only a report's drawing needs."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["plt", "save", "sns"]


class _OnFirstUse:
    """A module imported at its first attribute access, with matplotlib on the Agg backend before pyplot loads."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            import matplotlib
            matplotlib.use("Agg")
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


if TYPE_CHECKING:
    import matplotlib.pyplot as plt
    import seaborn as sns
else:
    plt = _OnFirstUse("matplotlib.pyplot")
    sns = _OnFirstUse("seaborn")


def save(fig: plt.Figure, out: Path, name: str) -> list[Path]:
    """``fig`` as ``out/name.png`` and ``out/name.pdf``, closed afterwards."""
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths
