"""The tuning budget of a comparison: what every method gets, declared once.

The comparison kinds (accuracy, input_scale) and the fidelity bench train every method, Chimera included, under
this budget, and ``docs/baselines.md`` is rendered from it (chimera.book), so the page and the code cannot
disagree. The rules:

- **The same number of configurations** (``CONFIGS``) for every method, from a grid stated here per method.
  Each configuration is trained on the training split; the one with the best validation macro-F1 is kept
  (ties: the first in grid order). The test split is read once, by the kept model.
- **The same class weighting** for every method: balanced (inverse class frequency), the yardsticks included.
- **Early stopping by patience** (``PATIENCE`` epochs without a better validation score, keeping the best
  epoch) for every method trained in epochs. ``EPOCH_CAP`` is a guard, not a budget: a run that reaches it is
  reported (``stopped_by: cap``), so a binding cap shows.
- **The same number of validation scorings**: a method's row records every validation score its choice read
  (``scorings``), and it equals ``CONFIGS`` for every method. So nothing is chosen on validation outside the grid:
  Chimera's fusion weight β is the fusion's configured one and there is no neural-only fallback inside the
  budget (each was once a further scoring per configuration: up to 28 for Chimera against 4 for each baseline).
- **A choice at a grid edge is flagged** (``at_edge``), as a binding epoch cap is: the grid may not have
  reached the method's best. An axis of two values has no interior, so a choice on it is always at an edge.

The gradient-trained methods share one optimizer grid (``OPTIMIZER``): the two learning rates and batch sizes
the methods used before this budget (the neural baselines' 3e-3 and 512, Chimera's 0.02 and 2048), crossed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

CONFIGS = 4
PATIENCE = 8
EPOCH_CAP = 200
CLASS_WEIGHT = "balanced"
SELECTION = "validation macro-F1; ties go to the first configuration in grid order"

#: ``full``: every configuration of the grid; ``first``: the grid's first configuration only (smoke tests
#: and quick looks; a run says which it used, and the book never cites a ``first`` run as a comparison)
Tuning = Literal["full", "first"]


@dataclass(frozen=True)
class Search:
    """One method's grid: ``CONFIGS`` value tuples of ``params``; ``also``: choices made without retraining."""

    params: tuple[str, ...]
    grid: tuple[tuple[Any, ...], ...]
    trained_in_epochs: bool
    also: str = ""

    def configs(self, tuning: Tuning = "full") -> list[dict[str, Any]]:
        grid = self.grid if tuning == "full" else self.grid[:1]
        return [dict(zip(self.params, values)) for values in grid]

    @staticmethod
    def label(config: dict[str, Any]) -> str:
        """``lr=0.003 batch_size=512``: how a configuration is named in a run's tables."""
        return " ".join(f"{k}={v}" for k, v in config.items())


OPTIMIZER_GRID: tuple[tuple[Any, ...], ...] = ((0.003, 512), (0.003, 2048), (0.02, 512), (0.02, 2048))
OPTIMIZER = Search(("lr", "batch_size"), OPTIMIZER_GRID, trained_in_epochs=True)
NEURAL = ("N3IC", "MLP-B", "BoS", "RNN-B", "CNN-B", "CNN-M", "CNN-L")

SEARCHES: dict[str, Search] = {
    "Chimera": Search(OPTIMIZER.params, OPTIMIZER_GRID, True,
                      also="fusion weight β: the fusion's configured one (choosing it on validation would be "
                           "scorings outside the budget)"),
    **{name: OPTIMIZER for name in NEURAL},
    "AutoEncoder": Search(OPTIMIZER.params, OPTIMIZER_GRID, True,
                          also="threshold: the benign validation windows' score quantile (autoencoder_quantile)"),
    # widened after every published run chose the old grids' top (Leo 12 of 6-12 on all three profiles, the tree
    # 24 of 8-24 on two; issue 53): a choice at an edge is still flagged (at_edge)
    "Leo": Search(("depth",), ((8,), (12,), (16,), (20,)), False),
    "Tree (yardstick)": Search(("depth",), ((12,), (18,), (24,), (32,)), False),
    "Forest (yardstick)": Search(("max_features",), (("sqrt",), (0.2,), (0.33,), (0.66,)), False),
}


def _values(label: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in label.split())


def at_edge(chosen: str, labels: list[str]) -> str:
    """Which of the chosen configuration's values sit at an edge of the grid tried ("" where none): the lowest or
    highest value of a numeric axis. A grid's edge that binds means the method may be under-tuned."""
    grid = [_values(x) for x in labels]
    out = []
    for k, v in _values(chosen).items():
        try:
            axis = sorted({float(g[k]) for g in grid if k in g})
            x = float(v)
        except ValueError:
            continue   # a categorical axis has no edge
        if len(axis) < 2:
            continue
        if x in (axis[0], axis[-1]):
            out.append(f"{k}={v} is the grid's {'lowest' if x == axis[0] else 'highest'} ({len(axis)} values)")
    return "; ".join(out)


def tuning_columns(chosen: str, validation: dict[str, float], scorings: int | None = None) -> dict[str, Any]:
    """The columns every method's row carries: how many configurations it tried, how many validation scores its
    choice read (``scorings``, default one per configuration), the one kept and whether it sits at the grid's
    edge, its validation macro-F1 and every configuration's (``validation``: label -> validation macro-F1, in
    grid order)."""
    return {"configs_tried": len(validation), "scorings": len(validation) if scorings is None else scorings,
            "chosen": chosen, "at_edge": at_edge(chosen, list(validation)), "val_f1": validation[chosen],
            "validation": "; ".join(f"{k}: {v:.4f}" for k, v in validation.items())}
