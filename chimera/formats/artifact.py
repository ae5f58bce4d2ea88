"""The table artifact: one versioned, hashed JSON file read by every target.

It holds the constants (also emitted as a C/P4 header), every table's entries
and the resource accounting. ``sha256`` covers the canonical JSON of all other
fields, so a target can prove which tables it runs and a report can cite them.
The meaning of every table is docs/pipeline.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chimera.errors import ConfigError

FORMAT = "chimera-artifact/3"  # 3: the wire formats' constants left the artifact (the header writes them)

#: the Map tables: what a live control-plane update may change (docs/pipeline.md, "State and versions")
MAP_TABLES = ("len_lo", "len_fine_lo", "flag_ternary", "map", "port_vocab")
#: the value sub-token tables, in sub-token order
VALUE_TABLES = ("val_len", "val_iat", "val_flags", "val_port", "val_index")


@dataclass(frozen=True)
class RuleTable:
    """A ternary rule table by name: entry i matches a rule key k when ``k & mask[i] == value[i] & mask[i]``.

    Stored in the artifact as one integer array per table: hard rules
    ``[value[K] | mask[K] | rule | label]``, soft rules ``[value[K] | mask[K] | rule]`` (entries grouped by rule),
    K being the rule key's field count (chimera.rules.spec.KEY_FIELDS). This class is the one place that
    layout is written; every reader uses these names.
    """

    value: np.ndarray   # [E, K]
    mask: np.ndarray    # [E, K]
    rule: np.ndarray    # [E] rule index (hard: the rule id in the verdict; soft: the rule whose weights it adds)
    label: np.ndarray | None  # [E] hard rules: the forced label; soft rules: None

    @staticmethod
    def of(stored: np.ndarray, labelled: bool) -> "RuleTable":
        a = np.asarray(stored, np.int64)
        k = (a.shape[1] - (2 if labelled else 1)) // 2 if a.ndim == 2 else 0
        a = a.reshape(-1, 2 * k + (2 if labelled else 1)) if a.size else np.zeros((0, 2 * k + 1 + labelled), np.int64)
        return RuleTable(a[:, :k], a[:, k:2 * k], a[:, 2 * k], a[:, 2 * k + 1] if labelled else None)

    def stored(self) -> np.ndarray:
        cols = [self.value, self.mask, self.rule[:, None]] + ([] if self.label is None else [self.label[:, None]])
        return np.hstack(cols).astype(np.int64)

    def __len__(self) -> int:
        return int(self.rule.shape[0])


@dataclass(frozen=True)
class GlobalTable:
    """The global layer's ternary table by name: an entry matches a packet whose centroid ``c`` and protocol
    class ``pc`` satisfy both ternary fields, and adds ``g[y]`` to A_y and ``gz`` to Z (first match only).
    Stored as ``[c_value | c_mask | pc_value | pc_mask | g[Y] | gz]``; this class is that layout's one place."""

    c_value: np.ndarray   # [G]
    c_mask: np.ndarray
    pc_value: np.ndarray
    pc_mask: np.ndarray
    g: np.ndarray         # [G, Y]
    gz: np.ndarray        # [G]

    @staticmethod
    def of(stored: np.ndarray, n_classes: int) -> "GlobalTable":
        a = np.asarray(stored, np.int64).reshape(-1, 4 + n_classes + 1)
        return GlobalTable(a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4:4 + n_classes], a[:, 4 + n_classes])

    def stored(self) -> np.ndarray:
        return np.column_stack([self.c_value, self.c_mask, self.pc_value, self.pc_mask, self.g, self.gz]).astype(
            np.int64).reshape(-1, 4 + self.g.shape[1] + 1)

    @property
    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, masks) as [G, 2] ternary columns over (centroid, protocol class)."""
        return np.column_stack([self.c_value, self.pc_value]), np.column_stack([self.c_mask, self.pc_mask])

    def __len__(self) -> int:
        return int(self.gz.shape[0])


@dataclass
class Artifact:
    """Compiled tables. Arrays are numpy in memory and nested lists on disk."""

    classes: list[str]
    constants: dict[str, int]
    len_lo: np.ndarray            # [LEN_BINS] coarse range table lower bounds (the centroid key)
    len_fine_lo: np.ndarray       # [LEN_FINE] fine range table lower bounds (the length sub-token)
    flag_ternary: np.ndarray      # [E, 3] (value, mask, class), first match wins
    map: np.ndarray               # [MAP_KEYS] centroid id
    port_vocab: np.ndarray        # [P] responder ports; port_vocab[i] has id i + 1, every other port id 0
    val_len: np.ndarray           # [2 * LEN_FINE, D_V] value tables (signed, TABLE_BITS)
    val_iat: np.ndarray           # [2 * IAT_BUCKETS, D_V]
    val_flags: np.ndarray         # [FLAG_CLASSES * PROTO_CLASSES, D_V]
    val_port: np.ndarray          # [2 * PORT_IDS, D_V]
    val_index: np.ndarray         # [IDX_BUCKETS, D_V]
    phi_q: np.ndarray             # [C, m] query features (unsigned); zeros when KERNEL_TABLE
    phi_k: np.ndarray             # [C, m] key features
    kernel: np.ndarray            # [C, C] K_int (= phi_q phi_k^T exactly for prf; a clipped table otherwise)
    w_out: np.ndarray             # [D_V, Y] class head (signed)
    global_entries: np.ndarray    # the global layer, stored as GlobalTable lays it out (read it via .global_table)
    hard: np.ndarray              # hard rules, stored as RuleTable lays them out (read them via .hard_rules)
    soft_entries: np.ndarray      # soft rule entries, likewise (via .soft_rules), grouped by rule
    soft_weights: np.ndarray      # [R, Y] W_int
    resources: dict[str, Any] = field(default_factory=dict)  # JSON in and out: the artifact's resource record
    provenance: dict[str, Any] = field(default_factory=dict)  # JSON in and out: the artifact's provenance record
    rule_names: dict[str, list[str]] = field(default_factory=dict)

    ARRAYS = ("len_lo", "len_fine_lo", "flag_ternary", "map", "port_vocab", *VALUE_TABLES, "phi_q", "phi_k", "kernel",
              "w_out", "global_entries", "hard", "soft_entries", "soft_weights")

    def c(self, name: str) -> int:
        return int(self.constants[name])

    @property
    def hard_rules(self) -> RuleTable:
        return RuleTable.of(self.hard, labelled=True)

    @property
    def soft_rules(self) -> RuleTable:
        return RuleTable.of(self.soft_entries, labelled=False)

    @property
    def global_table(self) -> GlobalTable:
        return GlobalTable.of(self.global_entries, len(self.classes))

    @property
    def values(self) -> list[np.ndarray]:
        """The five value tables in sub-token order."""
        return [getattr(self, n) for n in VALUE_TABLES]

    def to_json(self) -> dict[str, Any]:  # JSON out: artifact.json
        body: dict[str, Any] = {  # JSON out: artifact.json
            "format": FORMAT, "classes": self.classes, "constants": self.constants,
            "tables": {k: np.asarray(getattr(self, k)).tolist() for k in self.ARRAYS},
            "shapes": {k: list(np.asarray(getattr(self, k)).shape) for k in self.ARRAYS},
            "resources": self.resources, "provenance": self.provenance, "rule_names": self.rule_names,
        }
        body["sha256"] = content_hash(body)
        return body

    @property
    def sha256(self) -> str:
        return str(self.to_json()["sha256"])

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write atomically; returns the content hash."""
        body = self.to_json()
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps(body, separators=(",", ":")))
        os.replace(tmp, p)
        return str(body["sha256"])

    @staticmethod
    def load(path: str | os.PathLike[str]) -> "Artifact":
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"{p}: no table artifact there", "compile one first (invoke run-experiment writes it)")
        try:
            body = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{p}: not a table artifact (invalid JSON: {e})",
                              "recompile the model (invoke run-experiment writes artifacts/*.json)") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            got = body.get("format") if isinstance(body, dict) else type(body).__name__
            raise ConfigError(f"{p}: format {got!r}, expected {FORMAT!r}", "recompile the model with this version")
        if content_hash(body) != body.get("sha256"):
            raise ConfigError(f"{p}: content does not match its sha256 (edited or corrupt)", "recompile the model")
        try:
            t, shapes = body["tables"], body["shapes"]
            arrays = {k: np.asarray(t[k], np.int64).reshape(shapes[k]) for k in Artifact.ARRAYS}
            return Artifact(classes=body["classes"], constants=body["constants"], **arrays,
                            resources=body["resources"], provenance=body["provenance"], rule_names=body["rule_names"])
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"{p}: artifact is missing or mangles a field ({e})", "recompile the model") from None


def content_hash(body: dict[str, Any]) -> str:  # JSON out: the body hashed as artifact.json writes it
    canon = json.dumps({k: v for k, v in body.items() if k != "sha256"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()
