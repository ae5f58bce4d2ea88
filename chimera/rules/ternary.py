"""Ternary (TCAM) match semantics: the one definition every stage uses.

An entry (value, mask) matches a key when ``key & mask == value & mask`` on
every field. ``first_match`` is what a TCAM returns (the first entry in
priority order); ``fires_by_group`` is the soft-rule reading (a group fires
when any of its entries matches). The flag-class table, the global layer, the
hard and soft rule tables, the eBPF loader's pre-resolved tables and the
software classifier all call these, so no stage has its own variant.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
def matches(key, values, masks, j):  # pragma: no cover - jitted
    """Entry j matches ``key`` (one row): ``key & mask == value & mask`` on every field. The one definition."""
    for k in range(key.shape[0]):
        if (key[k] & masks[j, k]) != (values[j, k] & masks[j, k]):
            return False
    return True


@numba.njit(cache=True, inline="always")
def _hit(keys, i, values, masks, j):  # pragma: no cover - jitted
    return matches(keys[i], values, masks, j)


@numba.njit(cache=True)
def _first_match(keys, values, masks):  # pragma: no cover - jitted
    out = np.full(keys.shape[0], -1, np.int64)
    for i in range(keys.shape[0]):
        for j in range(values.shape[0]):
            if _hit(keys, i, values, masks, j):
                out[i] = j
                break
    return out


@numba.njit(cache=True)
def _fires(keys, values, masks, group, n_groups):  # pragma: no cover - jitted
    out = np.zeros((keys.shape[0], n_groups), np.bool_)
    for i in range(keys.shape[0]):
        for j in range(values.shape[0]):
            if not out[i, group[j]] and _hit(keys, i, values, masks, j):
                out[i, group[j]] = True
    return out


def _as2d(a: np.ndarray, width: int) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, np.int64).reshape(-1, width))


def first_match(keys: np.ndarray, values: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Index of the first entry (priority order) matching each key row, -1 if none.

    keys: [N, F]; values, masks: [E, F]. Values need not be pre-masked.
    """
    keys = np.asarray(keys, np.int64)
    if keys.ndim == 1:
        keys = keys[:, None]
    width = keys.shape[1]
    values, masks = _as2d(values, width), _as2d(masks, width)
    if values.shape[0] == 0:
        return np.full(keys.shape[0], -1, np.int64)
    return _first_match(np.ascontiguousarray(keys), values, masks)


def fires_by_group(keys: np.ndarray, values: np.ndarray, masks: np.ndarray, group: np.ndarray,
                   n_groups: int) -> np.ndarray:
    """[N, n_groups] bool: group g fires when any of its entries matches the key row."""
    keys = np.ascontiguousarray(np.asarray(keys, np.int64))
    width = keys.shape[1]
    if n_groups == 0:
        return np.zeros((keys.shape[0], 0), bool)
    return _fires(keys, _as2d(values, width), _as2d(masks, width), np.ascontiguousarray(group, np.int64), n_groups)
