"""How a book writes a number: rounded (never truncated), signs kept, thousands separated, NaN said in words."""

from __future__ import annotations

import math
from collections.abc import Sequence


def _nan(x: float | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def f(x: float | None, nd: int = 4) -> str:
    """A measured value, rounded to ``nd`` decimals (0.75978 -> 0.7598 at 4)."""
    return "n/a" if _nan(x) else f"{float(x):.{nd}f}"  # type: ignore[arg-type]


def signed(x: float | None, nd: int = 4) -> str:
    """A difference, with its sign always written (+0.0058, -0.0053)."""
    return "n/a" if _nan(x) else f"{float(x):+.{nd}f}"  # type: ignore[arg-type]


def n(x: float | int | None) -> str:
    """A count, with thousands separators (605,412)."""
    return "n/a" if _nan(x) else f"{int(round(float(x))):,}"  # type: ignore[arg-type]


def pct(x: float | None, nd: int = 0) -> str:
    return "n/a" if _nan(x) else f"{100 * float(x):.{nd}f}%"  # type: ignore[arg-type]


def interval(lo: float | None, hi: float | None, nd: int = 4) -> str:
    return f"[{signed(lo, nd)}, {signed(hi, nd)}]"


def words(items: Sequence[str]) -> str:
    """a, b and c."""
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)
