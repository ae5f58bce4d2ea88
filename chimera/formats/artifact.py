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

FORMAT = "chimera-artifact/2"

#: the Map tables: what a live control-plane update may change (docs/pipeline.md, "State and versions")
MAP_TABLES = ("len_lo", "len_fine_lo", "flag_ternary", "map", "port_vocab")
#: the value sub-token tables, in sub-token order
VALUE_TABLES = ("val_len", "val_iat", "val_flags", "val_port", "val_index")


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
    global_entries: np.ndarray    # [G, 4 + Y + 1]: cq_value, cq_mask, pclass_value, pclass_mask, G[Y], Gz
    hard: np.ndarray              # [H, 7 + 7 + 2]: value[7], mask[7], rule index, label
    soft_entries: np.ndarray      # [S, 7 + 7 + 1]: value[7], mask[7], soft rule index (entries grouped by rule)
    soft_weights: np.ndarray      # [R, Y] W_int
    resources: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    rule_names: dict[str, list[str]] = field(default_factory=dict)

    ARRAYS = ("len_lo", "len_fine_lo", "flag_ternary", "map", "port_vocab", *VALUE_TABLES, "phi_q", "phi_k", "kernel",
              "w_out", "global_entries", "hard", "soft_entries", "soft_weights")

    def c(self, name: str) -> int:
        return int(self.constants[name])

    @property
    def values(self) -> list[np.ndarray]:
        """The five value tables in sub-token order."""
        return [getattr(self, n) for n in VALUE_TABLES]

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
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


def content_hash(body: dict[str, Any]) -> str:
    canon = json.dumps({k: v for k, v in body.items() if k != "sha256"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()
