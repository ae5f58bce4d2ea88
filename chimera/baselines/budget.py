"""The tuning budget of a comparison: what every method gets, declared once.

The comparison kinds (accuracy, input_scale) and the fidelity bench train every method, Chimera included, under
this budget, and ``docs/baselines.md`` is rendered from it (chimera.book), so the page and the code cannot
disagree. The rules:

- **The same number of configurations** (``CONFIGS``) for every method, from a search stated here per method (a grid, or a walk).
  Each configuration is trained on the training split; the first tried whose validation macro-F1 is within
  ``SELECTION_TIE`` of the best is kept (``kept_index``). The test split is read once, by the kept model. Why a band and
  not the strict best: on the small validation splits a gap of a few thousandths is noise, and a strict maximum lets
  that noise (another seed, another host's floats) move the choice, and with it the test score by far more than the
  gap (a margin of 0.0001 once moved a row by 0.12 on test). Within the band the earlier configuration, fixed by the
  grid's or the walk's order before any score is read, is kept, so the choice moves only for a real difference.
- **The same class weighting** for every method: balanced (inverse class frequency), the yardsticks included.
- **Early stopping by patience** (``PATIENCE`` epochs without a better validation score, keeping the best
  epoch) for every method trained in epochs. ``EPOCH_CAP`` is a guard, not a budget: a run that reaches it is
  reported (``stopped_by: cap``), so a binding cap shows.
- **The same number of validation scorings**: a method's row records every validation score its choice read
  (``scorings``), and it equals ``CONFIGS`` for every method. So nothing is chosen on validation outside the grid:
  Chimera's fusion weight β is the fusion's configured one and there is no neural-only fallback inside the
  budget (each was once a further scoring per configuration: up to 28 for Chimera against 4 for each baseline).
- **A choice at a grid edge is flagged** (``at_edge``), as a binding epoch cap is: the grid may not have
  reached the method's best. It **binds** (``edge_binds``) where validation still rises toward the edge: the
  kept value scores more than ``EDGE_RISE`` above its neighbour on that axis (the other values held). An edge
  within that of its neighbour sits on a flat stretch (a tree that never grows to the depth cap scores the same
  at every cap above its own depth) and is named, not counted as binding.

The gradient-trained methods share one optimizer search (``OPTIMIZER``): a **walk** of ``CONFIGS`` steps on one
learning-rate ladder at one batch size (``Ladder``). It scores the two rates the methods used before (3e-3, 0.02),
then each next the untried rate nearest the kept one, beyond it where the kept one is the highest or lowest tried
(validation still rises that way). So every method gets the same number of configurations under the same rule,
and each is placed by its own validation scores, never by test scores. Why a walk and not a fixed grid: on the
fixed axis ``1e-3, 3e-3, 0.02, 0.06`` (the committed real-set runs ``accuracy/20261127-172028-reference`` and
``20261127-172220-reference``) the neural methods' choices bound at both ends: on suricata-zeek-apps five of nine
kept 0.06, the top, with validation rising toward it; on ciciot2022-sonos two kept 1e-3, the bottom, and three
0.06. No fixed four values centre on both ends; a walk of four reaches from 4.5e-4 to 0.13 and stops where
validation turns. A kept rate that is still the highest or lowest tried after four steps is flagged
(``at_edge``) and binds where it rises more than ``EDGE_RISE`` over its neighbour, as a grid's edge does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from chimera.formats.rows import Cells

CONFIGS = 4
PATIENCE = 8
EPOCH_CAP = 200
CLASS_WEIGHT = "balanced"
SELECTION = ("validation macro-F1: the first configuration tried (a grid's order, or a walk's) within 0.005 of the "
             "best, so a gap within the tie band never moves the choice")

#: ``full``: every configuration of the grid; ``first``: the grid's first configuration only (smoke tests
#: and quick looks; a run says which it used, and the book never cites a ``first`` run as a comparison);
#: ``wide``: every configuration of the method's widened search (``WIDE``), a check on a row whose budgeted
#: choice binds at an edge (its own experiment, ``experiments/*_wide.yaml``), never the comparison itself
Tuning = Literal["full", "first", "wide"]


T = TypeVar("T")


@dataclass(frozen=True)
class Ladder:
    """A walk on one ordered numeric axis, the other parameters held: the same number of configurations as a
    grid, placed by the validation scores of the steps before (see the module's docstring)."""

    param: str
    values: tuple[float, ...]
    start: tuple[int, ...]                  # indices scored first, in this order
    held: tuple[tuple[str, Any], ...] = ()  # the other parameters, at one value each

    def config(self, i: int) -> dict[str, Any]:  # library boundary: a configuration's keyword arguments
        return {self.param: self.values[i], **dict(self.held)}

    def next_index(self, scores: Mapping[int, float]) -> int | None:
        """The next index to score given the scores so far (index -> validation score, in the order tried):
        the start indices first; then the untried index nearest the kept one (``kept_index``), the one beyond
        it where the kept is the highest or lowest tried; ties toward the higher value. None: all tried."""
        todo = [i for i in self.start if i not in scores]
        if todo:
            return todo[0]
        untried = [i for i in range(len(self.values)) if i not in scores]
        if not untried:
            return None
        order = list(scores)                          # the indices in the order tried
        kept = order[kept_index([scores[i] for i in order])]
        if kept == max(scores) and kept + 1 in untried:
            return kept + 1
        if kept == min(scores) and kept - 1 in untried:
            return kept - 1
        return min(untried, key=lambda i: (abs(i - kept), -i))

    def describe(self, steps: int) -> str:
        held = " ".join(f"{k}={v}" for k, v in self.held)
        start = ", ".join(str(self.values[i]) for i in self.start)
        return (f"a walk of {steps} on {self.param} in {{{', '.join(str(v) for v in self.values)}}} at {held}: "
                f"{start} first, then the untried value nearest the kept one (beyond it where the kept one is "
                "the highest or lowest tried)")


@dataclass(frozen=True)
class Search:
    """One method's search: the ``CONFIGS`` value tuples of ``params`` in ``grid``, or a walk on ``ladder``;
    ``also``: choices made without retraining."""

    params: tuple[str, ...]
    grid: tuple[tuple[Any, ...], ...] = ()
    trained_in_epochs: bool = False
    also: str = ""
    ladder: Ladder | None = None

    # dict[str, Any]: library boundary: configurations' keyword arguments
    def configs(self, tuning: Tuning = "full") -> list[dict[str, Any]]:
        """A grid's configurations (a walk's depend on its scores: ``run``)."""
        if self.ladder is not None:
            raise TypeError("a walk's configurations depend on its validation scores: use Search.run")
        grid = self.grid if tuning == "full" else self.grid[:1]
        return [dict(zip(self.params, values)) for values in grid]

    # dict[str, Any]: library boundary: a configuration's keyword arguments
    def run(self, evaluate: Callable[[dict[str, Any]], T], score: Callable[[T], float],
            # dict[str, Any]: library boundary: a configuration's keyword arguments
            tuning: Tuning = "full") -> list[tuple[dict[str, Any], T]]:
        """Every configuration tried, in the order tried, with what ``evaluate`` made of it: a grid's in grid
        order; a walk's each chosen from the ``score`` (validation macro-F1) of those before. ``CONFIGS`` either
        way; ``first``: the first one only."""
        if self.ladder is None:
            return [(c, evaluate(c)) for c in self.configs(tuning)]
        out: list[tuple[dict[str, Any], T]] = []  # library boundary: a configuration's keyword arguments
        scores: dict[int, float] = {}
        i = self.ladder.next_index(scores)
        while i is not None and len(out) < (CONFIGS if tuning == "full" else 1):
            c = self.ladder.config(i)
            r = evaluate(c)
            out.append((c, r))
            scores[i] = score(r)
            i = self.ladder.next_index(scores)
        return out

    def describe(self) -> str:
        """The search as the budget page states it."""
        if self.ladder is not None:
            return self.ladder.describe(CONFIGS)
        return "; ".join(self.label(c) for c in self.configs())

    @staticmethod
    def label(config: dict[str, Any]) -> str:  # library boundary: a configuration's keyword arguments
        """``lr=0.003 batch_size=512``: how a configuration is named in a run's tables."""
        return " ".join(f"{k}={v}" for k, v in config.items())


def lr_rungs(lo: int, hi: int) -> tuple[float, ...]:
    """The learning-rate ladder's rungs k = lo..hi: 3e-3 * (0.02 / 3e-3) ** (k / 2), to two digits (3e-3 and 0.02,
    the rates the methods used before, are rungs 0 and 2)."""
    return tuple(float(f"{3e-3 * (0.02 / 3e-3) ** (k / 2):.2g}") for k in range(lo, hi + 1))


#: the learning-rate ladder, k = -2..4: the two rates the methods used before are two rungs apart, and a walk of
#: four from them cannot step off either end
LR_LADDER: tuple[float, ...] = lr_rungs(-2, 4)
OPTIMIZER = Search(("lr", "batch_size"), trained_in_epochs=True,
                   ladder=Ladder("lr", LR_LADDER, (LR_LADDER.index(0.003), LR_LADDER.index(0.02)),
                                 (("batch_size", 512),)))
NEURAL = ("N3IC", "MLP-B", "BoS", "RNN-B", "CNN-B", "CNN-M", "CNN-L")

SEARCHES: dict[str, Search] = {
    "Chimera": dataclasses.replace(OPTIMIZER, also="fusion weight β: the fusion's configured one (choosing it on "
                                                   "validation would be scorings outside the budget)"),
    **{name: OPTIMIZER for name in NEURAL},
    "AutoEncoder": dataclasses.replace(OPTIMIZER, also="threshold: the benign validation windows' score quantile "
                                                       "(autoencoder_quantile)"),
    # widened after every published run chose the old grids' top (Leo 12 of 6-12 on all three profiles, the tree
    # 24 of 8-24 on two; issue 53): a choice at an edge is still flagged (at_edge), and binds only where
    # validation still rises toward it (on the small real sets the tree scores the same at every cap >= 12)
    "Leo": Search(("depth",), ((8,), (12,), (16,), (20,))),
    "Tree (yardstick)": Search(("depth",), ((12,), (18,), (24,), (32,))),
    "Forest (yardstick)": Search(("max_features",), (("sqrt",), (0.2,), (0.33,), (0.66,))),
}


#: the widened searches: each method's budgeted values and more on both sides, the same number for every method
#: (``WIDE_CONFIGS``), each trained in full (grids: a walk needs no widening where every rung is tried). The
#: learning-rate ladder is rungs k = -6..6 (lr_rungs) (1e-5 to 0.89); Leo and the tree go deeper and
#: shallower than their grids, the forest samples fewer and more features.
WIDE_LADDER: tuple[float, ...] = lr_rungs(-6, 6)
WIDE_CONFIGS = len(WIDE_LADDER)
WIDE_OPTIMIZER = Search(("lr", "batch_size"), tuple((lr, 512) for lr in WIDE_LADDER), trained_in_epochs=True)
WIDE: dict[str, Search] = {
    "Chimera": dataclasses.replace(WIDE_OPTIMIZER, also=SEARCHES["Chimera"].also),
    **{name: WIDE_OPTIMIZER for name in NEURAL},
    "AutoEncoder": dataclasses.replace(WIDE_OPTIMIZER, also=SEARCHES["AutoEncoder"].also),
    "Leo": Search(("depth",), tuple((d,) for d in range(4, 29, 2))),
    "Tree (yardstick)": Search(("depth",), tuple((d,) for d in (6, 9, 12, 15, 18, 21, 24, 28, 32, 36, 40, 48, 64))),
    "Forest (yardstick)": Search(("max_features",), tuple((x,) for x in (
        "sqrt", "log2", 0.05, 0.1, 0.15, 0.2, 0.25, 0.33, 0.4, 0.5, 0.66, 0.8, 1.0))),
}


def search_of(name: str, tuning: Tuning) -> tuple[Search, Tuning]:
    """The search method ``name`` runs under ``tuning``, and how to run it: its widened search in full where
    ``tuning`` is ``wide``, else its budgeted search as ``tuning`` says."""
    return (WIDE[name], "full") if tuning == "wide" else (SEARCHES[name], tuning)


def _values(label: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in label.split())


def _numeric(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None   # a categorical value (max_features=sqrt) has no order, so no edge


#: the least rise of validation macro-F1 toward an edge that counts as binding: the ledger's tie band
#: (chimera.book.rules.TIE); a smaller rise on the small real sets' validation splits is within their noise
EDGE_RISE = 0.005
#: validation scores within this of the best are a tie, kept by order (the first tried): the ledger's tie band too
SELECTION_TIE = 0.005


def kept_index(scores: Sequence[float]) -> int:
    """The configuration kept among validation ``scores`` in the order tried: the first within ``SELECTION_TIE`` of
    the best (a tie band, not the strict best: see the module's docstring). The comparison allows 1e-12 for floats:
    a gap written as 0.005 is a tie."""
    best = max(scores)
    return next(i for i, s in enumerate(scores) if best - s <= SELECTION_TIE + 1e-12)


def edges(chosen: str, validation: Mapping[str, float]) -> tuple[str, bool]:
    """(which of the chosen configuration's values sit at an edge of the grid tried, "" where none; whether one
    binds). An edge is the lowest or highest value of a numeric axis of two or more values; it binds where the
    chosen configuration scores more than ``EDGE_RISE`` above its neighbour on that axis (the configuration one
    value inward, the other values held): validation still rises toward the edge, so the grid may not have
    reached the method's best."""
    grid = {label: _values(label) for label in validation}
    mine = _values(chosen)
    out, binds = [], False
    for k, v in mine.items():
        x = _numeric(v)
        axis = sorted({a for g in grid.values() if k in g and (a := _numeric(g[k])) is not None})
        if x is None or len(axis) < 2 or x not in (axis[0], axis[-1]):
            continue
        low = x == axis[0]
        inward = axis[1] if low else axis[-2]
        nb = next((lab for lab, g in grid.items() if k in g and _numeric(g[k]) == inward
                   and all(g.get(o) == w for o, w in mine.items() if o != k)), None)
        what = f"{k}={v} is the grid's {'lowest' if low else 'highest'} ({len(axis)} values)"
        if nb is not None:
            gain = validation[chosen] - validation[nb]
            rises = gain > EDGE_RISE
            binds |= rises
            what += (f"; validation rises toward it (+{gain:.4f} over {k}={_values(nb)[k]})" if rises else
                      f"; flat toward it ({gain:+.4f} over {k}={_values(nb)[k]}, within {EDGE_RISE})")
        out.append(what)
    return "; ".join(out), binds


def tuning_columns(chosen: str, validation: dict[str, float], scorings: int | None = None) -> Cells:
    """The columns every method's row carries: how many configurations it tried, how many validation scores its
    choice read (``scorings``, default one per configuration), the one kept, whether it sits at the grid's
    edge and whether that edge binds (``edges``), its validation macro-F1 and every configuration's
    (``validation``: label -> validation macro-F1, in the order tried)."""
    edge, binds = edges(chosen, validation)
    return {"configs_tried": len(validation), "scorings": len(validation) if scorings is None else scorings,
            "chosen": chosen, "at_edge": edge, "edge_binds": binds, "val_f1": validation[chosen],
            "validation": "; ".join(f"{k}: {v:.4f}" for k, v in validation.items())}
