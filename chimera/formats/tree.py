"""A decision tree as switch tables (Leo's form): the format a trained tree hands to a dataplane program.

Each input the tree tests gets a range table that maps its value to an interval code (the number of the input's
thresholds below the value); the leaf table maps a box of codes (one interval per input) to a class. An input is
named ``field[t-k]`` (the field of the flow's packet k before this one; k = 0 is the packet itself) or ``field``
(the packet's own). A lagged input before the flow's start is missing, which the tree sees as -1: a program
that holds values unsigned adds 1 to every value and threshold, so missing is 0.

A module of its own, below the baselines that fit trees and the targets that compile them, so neither names the
other (chimera.baselines.leo fits one; chimera.targets.tofino compiles one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: what a lag looks like in an input's name
_LAG = re.compile(r"^(\w+)\[t-(\d+)\]$")


@dataclass(frozen=True)
class RangeTree:
    """A tree's range tables and leaf table."""

    inputs: tuple[str, ...]                      # per range table: the input it reads
    thresholds: tuple[tuple[int, ...], ...]      # per input: sorted thresholds (value <= threshold goes left)
    leaf_lo: tuple[tuple[int, ...], ...]         # per leaf: the code interval of each input (inclusive)
    leaf_hi: tuple[tuple[int, ...], ...]
    leaf_class: tuple[int, ...]
    n_classes: int

    def __post_init__(self) -> None:
        if len(self.thresholds) != len(self.inputs):
            raise ValueError(f"{len(self.inputs)} inputs but {len(self.thresholds)} threshold lists")
        if not (len(self.leaf_lo) == len(self.leaf_hi) == len(self.leaf_class)) or not self.leaf_class:
            raise ValueError("every leaf needs its code box and its class, and a tree has a leaf")
        if any(len(b) != len(self.inputs) for b in (*self.leaf_lo, *self.leaf_hi)):
            raise ValueError("a leaf's box has one interval per input")

    @staticmethod
    def field_lag(name: str) -> tuple[str, int]:
        """``ip_len[t-2]`` -> ("ip_len", 2); ``proto`` -> ("proto", 0)."""
        m = _LAG.match(name)
        return (m.group(1), int(m.group(2))) if m else (name, 0)

    def lags(self) -> dict[str, int]:
        """Per field, the deepest lag the tree reads (0: only the packet's own value)."""
        out: dict[str, int] = {}
        for name in self.inputs:
            f, k = self.field_lag(name)
            out[f] = max(out.get(f, 0), k)
        return out
