"""Typed rows: a table's rows are frozen dataclasses, and its schema is derived from the class.

A resident (a kind, a bench) declares one dataclass per table it writes; ``schema_of`` derives the
``TableSchema`` (its columns and their types, from the fields' annotations), and ``frame`` turns a list of rows
into the frame that schema describes, with the columns in field order even when there are no rows. So a column
is named once, in the class; mypy checks every place a row is built; and the file is checked against the
schema where it is written (``TableSchema.write``). A module of its own, so a resident moves to typed rows
without touching the schema module every run reads.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from typing import Any

import pandas as pd

from chimera.formats.tables import Dtype, TableSchema

_DTYPES: dict[type, Dtype] = {bool: "bool", int: "int", float: "float", str: "str"}

#: one cell of a table (a missing value: None, or NaN in a float column)
Cell = str | int | float | bool | None
#: a row's cells by column, where a row is put together from parts (a variant's columns, a target's outcome, a
#: trained model's) before one frame is made of the rows; the table's schema checks it where it is written
Cells = dict[str, Cell]


def num(c: Cell) -> float:
    """A numeric cell as a float (None: NaN); text where a number belongs is a bug, so it raises."""
    if c is None:
        return float("nan")
    if isinstance(c, str):
        raise TypeError(f"a numeric cell holds text: {c!r}")
    return float(c)


def _dtype(cls: type, name: str, hint: Any) -> Dtype:
    """A field's column type: its annotation, less ``None`` (an optional cell is a missing value)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0] if len(args) == 1 else hint
    if hint not in _DTYPES:
        raise TypeError(f"{cls.__name__}.{name}: a column must be bool, int, float or str (or one of them | None), "
                        f"not {hint!r}")
    return _DTYPES[hint]


def columns_of(row: type) -> dict[str, Dtype]:
    """The columns of a row class, in field order, with their types."""
    if not (dataclasses.is_dataclass(row) and row.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise TypeError(f"{row.__name__}: a row is a frozen dataclass")
    hints = typing.get_type_hints(row)
    return {f.name: _dtype(row, f.name, hints[f.name]) for f in dataclasses.fields(row)}


def schema_of(row: type, name: str, keys: tuple[str, ...] = (), doc: str = "",
              metrics: tuple[str, ...] = ()) -> TableSchema:
    """The table whose rows are ``row``: its columns from the class, the rest as given."""
    return TableSchema(name, columns_of(row), keys=keys, doc=doc or (row.__doc__ or "").strip(), metrics=metrics)


def frame(rows: Sequence[Any], row: type) -> pd.DataFrame:
    """The rows as a frame with the class's columns, in field order (the columns also where there is no row)."""
    bad = [type(r).__name__ for r in rows if type(r) is not row]
    if bad:
        raise TypeError(f"rows of {row.__name__} expected, got {sorted(set(bad))}")
    return pd.DataFrame([dataclasses.asdict(r) for r in rows], columns=list(columns_of(row)))
