"""The paper's claims (``paper/claims.yaml``), typed: its five tables and its figure captions.

The file is the paper's words and numbers as printed; this module is the one place that reads it. Every float
keeps its printed text (``PaperNumber``), so a gap is taken in exact decimals at the paper's precision. A table's
rows are named (Tables 1-3: one row per method) or ordered (Tables 4-5: a grid of settings); a row is
addressed by its key (the method, or the index), and a claim's source id is ``<table>/<key>/<column>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from chimera.book.rules import PaperNumber
from chimera.errors import ResultsError
from chimera.report.provenance import ROOT

PAPER = ROOT / "paper" / "claims.yaml"

#: a cell as the paper prints it: a number (its printed text kept), a word ("2KB", "negligible"), or empty
Cell = PaperNumber | int | str | None

#: the tables, in the paper's order
TABLES = ("table1_accuracy", "table2_resources", "table3_ablation", "table4_hyper_dim", "table5_hyper_cadence")


class _PaperLoader(yaml.SafeLoader):
    """YAML with every float kept as the paper prints it."""


def _paper_float(loader: yaml.SafeLoader, node: yaml.Node) -> PaperNumber:
    assert isinstance(node, yaml.ScalarNode)
    return PaperNumber(str(loader.construct_scalar(node)))


_PaperLoader.add_constructor("tag:yaml.org,2002:float", _paper_float)


def number(c: Cell) -> float:
    """A cell read as a number (a PaperNumber keeps its printed text); a word or an empty cell is an error."""
    if c is None or isinstance(c, str):
        raise ResultsError(f"paper/claims.yaml: {c!r} where a number was expected", "fix the cell in the file")
    return c


@dataclass(frozen=True)
class PaperTable:
    """One table: its columns; its rows by method (Tables 1-3, ``rows``) or in order (the grids of Tables 4-5,
    ``grid``); its sentences (``claim``, or ``claims``)."""

    name: str
    columns: tuple[str, ...]
    rows: dict[str, tuple[Cell, ...]] = field(default_factory=dict)
    grid: tuple[tuple[Cell, ...], ...] = ()
    claim: str = ""
    claims: tuple[str, ...] = ()

    def cell(self, row: str | int, column: str) -> Cell:
        """One cell: a method's (named tables) or a grid row's (by index)."""
        return (self.rows[row] if isinstance(row, str) else self.grid[row])[self.columns.index(column)]

    def number(self, row: str | int, column: str) -> float:
        """One cell that must be a number (its printed text kept where the paper prints a decimal)."""
        return number(self.cell(row, column))

    def records(self) -> list[dict[str, Cell]]:
        """A grid's rows as column -> cell, in order."""
        return [dict(zip(self.columns, r)) for r in self.grid]

    def keys(self) -> list[str | int]:
        """How a claim's source id names each row: the method's name, or the grid row's index."""
        return [*self.rows] if self.rows else list(range(len(self.grid)))

    def sources(self) -> list[str]:
        """The source ids of its sentences (``claim``, ``claims/i``)."""
        return ([f"{self.name}/claim"] if self.claim else []) + \
            [f"{self.name}/claims/{i}" for i in range(len(self.claims))]


@dataclass(frozen=True)
class Paper:
    """The paper's claims: the source it cites, the five tables by name, and each figure's caption."""

    source: str
    tables: dict[str, PaperTable]
    figures: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> PaperTable:
        return self.tables[name]


def _table(name: str, raw: Any) -> PaperTable:
    # raw is YAML (an I/O boundary): checked here, typed from here on
    if not isinstance(raw, dict) or not isinstance(raw.get("columns"), list) or "rows" not in raw:
        raise ValueError(f"{name}: needs columns (a list) and rows")
    rows, width = raw["rows"], len(raw["columns"])
    cells = list(rows.values()) if isinstance(rows, dict) else rows if isinstance(rows, list) else None
    if cells is None:
        raise ValueError(f"{name}: rows must be a mapping or a list")
    if any(not isinstance(r, list) or len(r) != width for r in cells):
        raise ValueError(f"{name}: every row needs {width} cells, one per column")
    named = {str(k): tuple(v) for k, v in rows.items()} if isinstance(rows, dict) else {}
    grid = tuple(tuple(v) for v in rows) if isinstance(rows, list) else ()
    return PaperTable(name, tuple(str(c) for c in raw["columns"]), named, grid, str(raw.get("claim", "")),
                      tuple(str(c) for c in raw.get("claims", ())))


def load(path: Path = PAPER) -> Paper:
    """The paper's claims, typed; a clear error where the file is missing or malformed."""
    try:
        raw = yaml.load(path.read_text(), Loader=_PaperLoader)  # noqa: S506 (a SafeLoader subclass)
        if not isinstance(raw, dict):
            raise ValueError("not a mapping")
        missing = [t for t in TABLES if t not in raw]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        return Paper(str(raw.get("source", "")), {t: _table(t, raw[t]) for t in TABLES},
                     {str(k): str(v) for k, v in (raw.get("figures") or {}).items()})
    except (OSError, yaml.YAMLError, TypeError, ValueError) as e:
        raise ResultsError(f"{path}: the paper's claims cannot be read ({e})",
                           "restore paper/claims.yaml from git") from None
