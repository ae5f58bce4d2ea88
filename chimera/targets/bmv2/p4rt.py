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
from chimera.formats.artifact import Artifact, RuleTable
from chimera.rules.spec import KEY_FIELDS
from chimera.targets.bmv2.schema import (MAX_CENTROIDS, MAX_CLASSES, MAX_DV, MAX_FEATURES, MAX_FLOW_SLOTS, MAX_LEN_FINE,
                                         MAX_SAMPLE_SLOTS, MAX_SOFT, MAX_WINDOW, P4INFO, TABLE_BY_NAME, TABLES,
                                         VALUE_TABLES,
                                         qualified)

TOP_PRIORITY = 1 << 20


class P4RuntimeError(TargetError):
    """A P4Runtime call failed: finsy's P4ClientError translated once, here, with the code and what to do."""

    def __init__(self, operation: str, code: str, details: str) -> None:
        self.operation, self.code = operation, code
        super().__init__(f"P4Runtime {operation} failed: {code}: {details[:1500]}",
                         "the switch rejected the request: check that p4/chimera.p4 and its committed P4Info match "
                         "(invoke p4info --check) and that simple_switch_grpc is up (see its log in the run "
                         "directory)")

    @property
    def is_not_found(self) -> bool:
        return self.code == "NOT_FOUND"


def translated(operation: str, e: BaseException) -> P4RuntimeError:
    """P4RuntimeError for any exception out of finsy (its P4ClientError carries a gRPC code)."""
    code = getattr(getattr(e, "code", None), "name", None) or type(e).__name__
    return P4RuntimeError(operation, str(code), str(e))


def pack(values: np.ndarray, width: int = 32) -> int:
    """Signed values packed little-end first into one bit string (element i at bits width*i .. width*(i+1)-1)."""
    out = 0
    mask = (1 << width) - 1
    for i, v in enumerate(np.asarray(values, np.int64).tolist()):
        out |= (int(v) & mask) << (width * i)
    return out


def pack_classes(values: np.ndarray) -> int:
    """16 signed 32-bit values packed into a 512-bit action parameter (class y at bits 32y..32y+31)."""
    return pack(values, 32)


#: chimera.p4's compile-time limits, by constant (its #error checks say the same)
LIMITS = {"NUM_CLASSES": MAX_CLASSES, "WINDOW": MAX_WINDOW, "SOFT_RULES": MAX_SOFT, "NUM_CENTROIDS": MAX_CENTROIDS,
          "FLOW_SLOTS": MAX_FLOW_SLOTS, "RF_FEATURES": MAX_FEATURES, "D_V": MAX_DV, "LEN_FINE": MAX_LEN_FINE,
          "SAMPLE_SLOTS": MAX_SAMPLE_SLOTS}


def p4_limits() -> dict[str, int]:
    """chimera.p4's compiled-in maxima by artifact constant, entry caps per version included."""
    return {**LIMITS, "HARD_ENTRIES": TABLE_BY_NAME["hard_rules"].size // 2,
            "SOFT_ENTRIES_PER_RULE": TABLE_BY_NAME["soft_0"].size // 2}


def check_supported(art: Artifact) -> str | None:
    """Why chimera.p4 cannot run this artifact, or None."""
    for k, lim in LIMITS.items():
        if art.c(k) > lim:
            return f"{k}={art.c(k)} exceeds chimera.p4's maximum {lim}"
    if art.c("AGG_INCREMENTAL") != 1:
        return ("the batch form (and the kernel-table attention of rff/softmax) runs on the reference only; "
                "chimera.p4 keeps incremental S_t/Z_t accumulators")
    for name, limit in (("hard_rules", len(art.hard)), ("global_layer", len(art.global_entries))):
        if limit > TABLE_BY_NAME[name].size // 2:
            return f"{limit} entries for table {name} exceed its per-version capacity {TABLE_BY_NAME[name].size // 2}"
    soft = art.soft_rules
    per_rule = np.bincount(soft.rule, minlength=1) if len(soft) else np.zeros(1, int)
    if per_rule.max() > TABLE_BY_NAME["soft_0"].size // 2:
        return f"a soft rule with {per_rule.max()} entries exceeds a soft table's per-version capacity"
    return None


# dict[str, Any]: P4Runtime boundary: p4runtime-shell's match fields by name
def _t(name: str, match: dict[str, Any], action: str, priority: int = 0, **params: Any) -> P4TableEntry:
    return P4TableEntry(qualified(name), match=P4TableMatch(match),
                        action=P4TableAction(qualified(action), **params), priority=priority)


# dict[str, Any]: P4Runtime boundary: p4runtime-shell's match fields by name
def _rule_match(ver: int, t: RuleTable, i: int) -> dict[str, Any]:
    """Entry i's match fields, named as the P4 key names them (KEY_FIELDS order)."""
    m: dict[str, Any] = {"ver": ver}  # P4Runtime boundary: p4runtime-shell's match fields by name
    for f, (n, _) in enumerate(KEY_FIELDS):
        if int(t.mask[i, f]):  # an all-zero mask is a wildcard: omitted, as P4Runtime requires
            m[n] = (int(t.value[i, f]), int(t.mask[i, f]))
    return m


def _ranges(lo: list[int]) -> list[tuple[int, int]]:
    return [(start, (lo[b + 1] - 1) if b + 1 < len(lo) else 0xFFFF) for b, start in enumerate(lo)]


def map_entries(art: Artifact, ver: int) -> list[P4TableEntry]:
    """The Map tables of one version (what a live control-plane update rewrites): ranges, flags, map, ports."""
    out: list[P4TableEntry] = []
    for b, (start, end) in enumerate(_ranges(art.len_lo.tolist())):
        out.append(_t("len_range", {"ver": ver, "ip_len": (start, end)}, "set_len_bin", priority=TOP_PRIORITY - b,
                      bin=b))
    for b, (start, end) in enumerate(_ranges(art.len_fine_lo.tolist())):
        out.append(_t("len_fine_range", {"ver": ver, "ip_len": (start, end)}, "set_fine_bin",
                      priority=TOP_PRIORITY - b, bin=b))
    for i, (v, m, c) in enumerate(art.flag_ternary.tolist()):
        match: dict[str, Any] = {"ver": ver}  # P4Runtime boundary: p4runtime-shell's match fields by name
        if m:
            match["tcp_flags"] = (v, m)
        out.append(_t("flag_ternary", match, "set_flag_class", priority=TOP_PRIORITY - i, cls=c))
    for k, c in enumerate(art.map.tolist()):
        out.append(_t("map_exact", {"ver": ver, "map_key": k}, "set_centroid", centroid=int(c)))
    for i, port in enumerate(art.port_vocab.tolist()):
        out.append(_t("port_vocab_sport", {"ver": ver, "port": int(port)}, "set_port_id", id=i + 1))
        out.append(_t("port_vocab_dport", {"ver": ver, "port": int(port)}, "set_dport_id", id=i + 1))
    return out


def model_entries(art: Artifact, ver: int) -> list[P4TableEntry]:
    """Every model-table entry of one version of the artifact."""
    why = check_supported(art)
    if why:
        raise TargetError(f"artifact not supported by chimera.p4: {why}", "use --target reference")
    out: list[P4TableEntry] = [
        _t("params", {"ver": ver}, "set_params", alpha=art.c("ALPHA"), beta=art.c("BETA"), gamma=art.c("GAMMA"),
           lambda_h=art.c("LAMBDA_H"), map_version=art.c("MAP_VERSION"), use_window=art.c("USE_WINDOW"))]
    out += map_entries(art, ver)
    for (name, _, _), table in zip(VALUE_TABLES, art.values):
        for sid, row in enumerate(table):
            v = pack(row)
            out.append(_t(f"{name}_in", {"ver": ver, "id": sid}, "val_in", v=v))
            out.append(_t(f"{name}_out", {"ver": ver, "id": sid}, "val_out", v=v))
    for c in range(art.c("NUM_CENTROIDS")):
        out.append(_t("phi", {"ver": ver, "centroid": c}, "set_phi", q=pack(art.phi_q[c]), k=pack(art.phi_k[c])))
        out.append(_t("phi_out", {"ver": ver, "centroid": c}, "set_phi_out", k=pack(art.phi_k[c])))
    rows = [pack(art.w_out[e]) if e < art.w_out.shape[0] else 0 for e in range(MAX_DV)]
    out.append(_t("w_out", {"ver": ver}, "set_wout", **{f"w{e}": r for e, r in enumerate(rows)}))
    gt = art.global_table
    for i in range(len(gt)):
        match: dict[str, Any] = {"ver": ver}  # P4Runtime boundary: p4runtime-shell's match fields by name
        if gt.c_mask[i]:
            match["centroid"] = (int(gt.c_value[i]), int(gt.c_mask[i]))
        if gt.pc_mask[i]:
            match["proto_class"] = (int(gt.pc_value[i]), int(gt.pc_mask[i]))
        out.append(_t("global_layer", match, "glob_add", priority=TOP_PRIORITY - i, gz=int(gt.gz[i]),
                      g=pack(gt.g[i], 64)))
    hard = art.hard_rules
    assert hard.label is not None
    for i in range(len(hard)):
        out.append(_t("hard_rules", _rule_match(ver, hard, i), "hard_hit", priority=TOP_PRIORITY - i,
                      rule=int(hard.rule[i]), label=int(hard.label[i])))
    soft = art.soft_rules
    for i in range(len(soft)):
        r = int(soft.rule[i])
        out.append(_t(f"soft_{r}", _rule_match(ver, soft, i), "soft_add", priority=TOP_PRIORITY - i,
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


def _short(name: Any) -> Any:
    """Entries read back from the switch carry P4Info aliases ("map_exact"), ours full names."""
    return name.rsplit(".", 1)[-1] if isinstance(name, str) else name


def _entry_key(e: P4TableEntry) -> tuple[Any, ...]:
    return (_short(e.table_id), tuple(sorted((e.match or {}).items())), e.priority)


def _action_key(e: P4TableEntry) -> tuple[Any, ...]:
    a = e.action
    return (_short(getattr(a, "name", None)), tuple(sorted(getattr(a, "args", {}).items())))


def version_diff(held: list[P4TableEntry], entries: list[P4TableEntry]
                 ) -> tuple[list[P4TableEntry], list[P4TableEntry], list[P4TableEntry]]:
    """(deletes, modifies, inserts) that turn the entries a version holds into ``entries``."""
    old = {_entry_key(e): e for e in held}
    new = {_entry_key(e): e for e in entries}
    deletes = [e for k, e in old.items() if k not in new]
    inserts = [e for k, e in new.items() if k not in old]
    modifies = [e for k, e in new.items() if k in old and _action_key(old[k]) != _action_key(e)]
    return deletes, modifies, inserts


async def read_version(switch: Any, ver: int) -> list[P4TableEntry]:
    """Every entry version ``ver`` holds, read back from the switch (model tables only)."""
    out: list[P4TableEntry] = []
    for t in TABLES:
        if t.keys and t.keys[0].name == "ver":
            async for e in switch.read(P4TableEntry(qualified(t.name))):
                if isinstance(e, P4TableEntry) and (e.match or {}).get("ver") == ver:
                    out.append(e)
    return out


async def sync_version(switch: Any, art: Artifact, ver: int, held: list[P4TableEntry] | None,
                       batch: int = 1000, fail_after: int | None = None) -> tuple[float, list[P4TableEntry], int]:
    """A live install: bring version ``ver`` (inactive) to ``art`` with the fewest writes, then flip.

    ``held``: what ``ver`` holds now (None: nothing yet). A live Map update changes only the Map tables
    and the parameters (the map version), so it writes just those entries. Returns (seconds from the
    first write to the acknowledged flip, the entries ``ver`` now holds, writes issued). If a write is
    rejected, the flip is never sent: the active version is untouched. ``fail_after``: fault injection (the
    fuzzer): after that many writes, stop before the flip and raise as a rejected write would.
    """
    entries = model_entries(art, ver)
    if held is None:  # unknown (never written, or a failed install): read what the version holds
        held = await read_version(switch, ver)
    deletes, modifies, inserts = version_diff(held, entries)
    t0 = time.perf_counter()
    done = 0
    for op, todo in ((switch.delete, deletes), (switch.modify, modifies), (switch.insert, inserts)):
        for i in range(0, len(todo), batch):
            part = todo[i:i + batch]
            if fail_after is not None and done + len(part) > fail_after:
                part = part[:max(0, fail_after - done)]
                if part:
                    await op(part)
                raise TargetError(f"injected install failure after {fail_after} writes (fuzzer fault injection)",
                                  "the old version stays active; the next install rewrites this one")
            await op(part)
            done += len(part)
    if fail_after is not None:
        raise TargetError(f"injected install failure before the flip, after {done} writes (fuzzer fault injection)",
                          "the old version stays active; the next install rewrites this one")
    await switch.modify([flip_entry(ver)])
    return time.perf_counter() - t0, entries, len(deletes) + len(modifies) + len(inserts) + 1
