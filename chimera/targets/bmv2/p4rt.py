"""Artifact -> P4Runtime entities for chimera.p4 (finsy), and the versioned install.

Model tables carry a 1-bit ``ver`` key: an install writes every entry of the
inactive version in batches, then flips the version with one write (the default
action of the keyless ``active_version`` table), so a packet sees the old or the
new model, never a mix. Ternary entries
get priorities in first-match order (earlier entry = higher priority).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from finsy import P4Schema, P4TableAction, P4TableEntry, P4TableMatch

from chimera.errors import TargetError
from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.schema import MAX_CENTROIDS, MAX_CLASSES, MAX_SOFT, MAX_WINDOW, P4INFO, qualified

TOP_PRIORITY = 1 << 20


def pack_classes(values: np.ndarray) -> int:
    """16 signed 32-bit values packed into the 512-bit action parameter (class y at bits 32y..32y+31)."""
    out = 0
    for y, v in enumerate(np.asarray(values, np.int64).tolist()):
        out |= (int(v) & 0xFFFFFFFF) << (32 * y)
    return out


def check_supported(art: Artifact) -> str | None:
    """Why chimera.p4 cannot run this artifact, or None."""
    limits = [("NUM_CLASSES", MAX_CLASSES), ("WINDOW", MAX_WINDOW), ("SOFT_RULES", MAX_SOFT),
              ("NUM_CENTROIDS", MAX_CENTROIDS)]
    for k, lim in limits:
        if art.c(k) > lim:
            return f"{k}={art.c(k)} exceeds chimera.p4's maximum {lim}"
    if art.incremental is not None:
        return "incremental S_t/Z_t accumulators are not in chimera.p4 (batch only)"
    return None


def _t(name: str, match: dict[str, Any], action: str, priority: int = 0, **params: Any) -> P4TableEntry:
    return P4TableEntry(qualified(name), match=P4TableMatch(match),
                        action=P4TableAction(qualified(action), **params), priority=priority)


def _rule_match(ver: int, row: np.ndarray) -> dict[str, Any]:
    names = ("proto", "tcp_flags", "dir", "flow_pkts", "sport", "dport", "ip_len")
    m: dict[str, Any] = {"ver": ver}
    for i, n in enumerate(names):
        if int(row[7 + i]):  # an all-zero mask is a wildcard: omitted, as P4Runtime requires
            m[n] = (int(row[i]), int(row[7 + i]))
    return m


def model_entries(art: Artifact, ver: int) -> list[P4TableEntry]:
    """Every model-table entry of one version of the artifact."""
    why = check_supported(art)
    if why:
        raise TargetError(f"artifact not supported by chimera.p4: {why}", "use --target reference")
    C, Y = art.c("NUM_CENTROIDS"), art.c("NUM_CLASSES")
    out: list[P4TableEntry] = [
        _t("params", {"ver": ver}, "set_params", alpha=art.c("ALPHA"), beta=art.c("BETA"),
           lambda_h=art.c("LAMBDA_H"), map_version=art.c("MAP_VERSION"), use_window=art.c("USE_WINDOW"))]
    lo = art.len_lo.tolist()
    for b, start in enumerate(lo):
        end = (lo[b + 1] - 1) if b + 1 < len(lo) else 0xFFFF
        out.append(_t("len_range", {"ver": ver, "ip_len": (start, end)}, "set_len_bin", priority=TOP_PRIORITY - b,
                      bin=b))
    for i, (v, m, c) in enumerate(art.flag_ternary.tolist()):
        match: dict[str, Any] = {"ver": ver}
        if m:
            match["tcp_flags"] = (v, m)
        out.append(_t("flag_ternary", match, "set_flag_class", priority=TOP_PRIORITY - i, cls=c))
    for k, c in enumerate(art.map.tolist()):
        out.append(_t("map_exact", {"ver": ver, "map_key": k}, "set_centroid", centroid=int(c)))
    if art.c("USE_WINDOW"):
        for i in range(art.c("WINDOW")):
            for q in range(C):
                for c in range(C):
                    out.append(_t(f"window_{i}", {"ver": ver, "centroid": q, "key_centroid": c}, "win_add",
                                  k=int(art.window_k[q, c]), p=pack_classes(art.window_p[q, c])))
    for i, row in enumerate(art.global_entries.tolist()):
        match = {"ver": ver}
        if row[1]:
            match["centroid"] = (row[0], row[1])
        if row[3]:
            match["proto_class"] = (row[2], row[3])
        out.append(_t("global_layer", match, "glob_add", priority=TOP_PRIORITY - i, gz=int(row[4 + Y]),
                      p=pack_classes(row[4:4 + Y])))
    for i, row in enumerate(art.hard):
        out.append(_t("hard_rules", _rule_match(ver, row), "hard_hit", priority=TOP_PRIORITY - i,
                      rule=int(row[14]), label=int(row[15])))
    for i, row in enumerate(art.soft_entries):
        r = int(row[14])
        out.append(_t(f"soft_{r}", _rule_match(ver, row), "soft_add", priority=TOP_PRIORITY - i,
                      w=pack_classes(art.soft_weights[r])))
    return out


def port_entries(pairs: list[tuple[int, int]]) -> list[P4TableEntry]:
    return [_t("port_map", {"ingress_port": i}, "set_egress", port=o) for i, o in pairs]


def flip_entry(ver: int) -> P4TableEntry:
    """The one write that switches versions: the default action of the keyless active_version table."""
    return P4TableEntry(qualified("active_version"), action=P4TableAction(qualified("set_active"), ver=ver),
                        is_default_action=True)


def schema() -> P4Schema:
    return P4Schema(P4INFO)


async def install(switch: Any, art: Artifact, ver: int, stale: list[P4TableEntry] | None = None,
                  batch: int = 1000) -> tuple[float, list[P4TableEntry]]:
    """Write one version's entries (batches), then flip with one write: the default action of the
    keyless ``active_version`` table (BMv2's P4Runtime server does not write registers).

    ``stale``: entries still installed for ``ver`` from two installs ago; they are
    deleted first (they belong to the inactive version, so no packet sees them).
    Returns (seconds for the whole install, the entries now installed for ``ver``).
    """
    entries = model_entries(art, ver)
    t0 = time.perf_counter()
    for i in range(0, len(stale or []), batch):
        await switch.delete(stale[i:i + batch])  # type: ignore[index]
    for i in range(0, len(entries), batch):
        await switch.insert(entries[i:i + batch])
    await switch.modify([flip_entry(ver)])
    return time.perf_counter() - t0, entries
