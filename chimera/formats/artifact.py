"""The table artifact: one versioned, hashed JSON file read by every target.

It holds the constants (also emitted as a C/P4 header), every table's entries
and the resource accounting. ``sha256`` covers the canonical JSON of all other
fields, so a target can prove which tables it runs and a report can cite them.
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

FORMAT = "chimera-artifact/1"


@dataclass
class Artifact:
    """Compiled tables. Arrays are numpy in memory and nested lists on disk."""

    classes: list[str]
    constants: dict[str, int]
    len_lo: np.ndarray            # [LEN_BINS] range table lower bounds
    flag_ternary: np.ndarray      # [E, 3] (value, mask, class), first match wins
    map: np.ndarray               # [MAP_KEYS] centroid id
    window_k: np.ndarray          # [C, C] K_int
    window_p: np.ndarray          # [C, C, Y] P_int = K_int * U_int
    global_entries: np.ndarray    # [G, 4 + Y + 1]: cq_value, cq_mask, pclass_value, pclass_mask, G[Y], Gz
    hard: np.ndarray              # [H, 7 + 7 + 2]: value[7], mask[7], rule index, label
    soft_entries: np.ndarray      # [S, 7 + 7 + 1]: value[7], mask[7], soft rule index (entries grouped by rule)
    soft_weights: np.ndarray      # [R, Y] W_int
    incremental: dict[str, np.ndarray] | None = None  # phi_q, phi_k, values, w_out, g_inc, gz_inc
    resources: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    rule_names: dict[str, list[str]] = field(default_factory=dict)

    ARRAYS = ("len_lo", "flag_ternary", "map", "window_k", "window_p", "global_entries", "hard", "soft_entries",
              "soft_weights")

    def c(self, name: str) -> int:
        return int(self.constants[name])

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "format": FORMAT, "classes": self.classes, "constants": self.constants,
            "tables": {k: getattr(self, k).tolist() for k in self.ARRAYS},
            "incremental": {k: v.tolist() for k, v in self.incremental.items()} if self.incremental else None,
            "resources": self.resources, "provenance": self.provenance, "rule_names": self.rule_names,
        }
        body["sha256"] = content_hash(body)
        return body

    @property
    def sha256(self) -> str:
        return self.to_json()["sha256"]

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
        body = json.loads(p.read_text())
        if body.get("format") != FORMAT:
            raise ConfigError(f"{p}: format {body.get('format')!r}, expected {FORMAT!r}", "recompile the model")
        if content_hash(body) != body.get("sha256"):
            raise ConfigError(f"{p}: content does not match its sha256 (edited or corrupt)", "recompile the model")
        t = body["tables"]
        dtypes = {"window_p": np.int64, "global_entries": np.int64}
        arrays = {k: np.asarray(t[k], dtypes.get(k, np.int64)) for k in Artifact.ARRAYS}
        inc = body.get("incremental")
        return Artifact(classes=body["classes"], constants=body["constants"], **arrays,
                        incremental={k: np.asarray(v, np.int64) for k, v in inc.items()} if inc else None,
                        resources=body["resources"], provenance=body["provenance"], rule_names=body["rule_names"])


def content_hash(body: dict[str, Any]) -> str:
    canon = json.dumps({k: v for k, v in body.items() if k != "sha256"}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()
