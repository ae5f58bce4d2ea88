"""The rule file (YAML) and its compilation to ternary entries.

    version: 1
    hard:                     # signature -> forced label (the hard veto)
      - name: syn_flood_no_options
        label: SYN_FLOOD
        match: {proto: tcp, tcp_flags: {set: [SYN], unset: [ACK]}, ip_len: 40}
    soft:                     # groundings whose per-class weights are learned offline
      - name: dns
        match: {proto: udp, port: 53}

Match fields (all optional; absent = wildcard): proto (tcp/udp/icmp or a
number), sport, dport, port (either side), ip_len, tcp_flags, dir (0 = the way
the flow's first packet went, 1 = reverse), flow_pkts (packets of the flow so
far, this one included, saturating at 255). Values: an integer (exact),
{value, mask} (ternary), {min, max} (range, expanded to ternary prefixes), and
for tcp_flags {set: [...], unset: [...]} with SYN ACK FIN RST PSH URG ECE CWR.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from chimera.formats.artifact import RuleTable
from chimera.errors import ConfigError, validation_problems
from chimera.rules.ternary import fires_by_group, first_match

#: Rule key layout, shared with the dataplanes (field, width in bits).
KEY_FIELDS: tuple[tuple[str, int], ...] = (
    ("proto", 8), ("tcp_flags", 8), ("dir", 8), ("flow_pkts", 8), ("sport", 16), ("dport", 16), ("ip_len", 16),
)
FIELD_INDEX = {f: i for i, (f, _) in enumerate(KEY_FIELDS)}
FIELD_WIDTH = dict(KEY_FIELDS)
MATCH_FIELDS = set(FIELD_INDEX) | {"port"}
PROTO_NAMES = {"tcp": 6, "udp": 17, "icmp": 1}
TCP_FLAG_BITS = {"FIN": 0x01, "SYN": 0x02, "RST": 0x04, "PSH": 0x08, "ACK": 0x10, "URG": 0x20, "ECE": 0x40,
                 "CWR": 0x80}
FLOW_PKTS_SATURATION = 255


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    label: str | None = None
    match: dict[str, Any]  # YAML in: a rule's match as the rules file gives it

    @field_validator("match")
    @classmethod
    def _fields(cls, v: dict[str, Any]) -> dict[str, Any]:  # YAML in: a rule's match as the rules file gives it
        unknown = sorted(set(v) - MATCH_FIELDS)
        if unknown:
            raise ValueError(f"unknown match field(s) {unknown}; allowed: {sorted(MATCH_FIELDS)}")
        return v


class RuleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int = 1
    hard: list[RuleSpec] = []
    soft: list[RuleSpec] = []


@dataclass(frozen=True)
class TernaryEntry:
    """One ternary entry over the rule key: (key & mask) == value for every field."""

    value: tuple[int, ...]
    mask: tuple[int, ...]


def _range_to_prefixes(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """Minimal (value, mask) prefixes covering [lo, hi] (classic range expansion)."""
    out = []
    full = (1 << width) - 1
    while lo <= hi:
        size = lo & -lo if lo else 1 << width
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out


def _field_alternatives(field: str, spec: Any, where: str) -> list[tuple[int, int]]:
    width = FIELD_WIDTH[field]
    full = (1 << width) - 1

    def check(x: Any, what: str) -> int:
        if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= full:
            raise ConfigError(f"{where}: {field}.{what} = {x!r} is not an integer in [0, {full}]",
                              f"give {field} as an integer, {{value, mask}} or {{min, max}}")
        return x

    if field == "proto" and isinstance(spec, str):
        if spec.lower() not in PROTO_NAMES:
            raise ConfigError(f"{where}: unknown protocol {spec!r}", f"use one of {sorted(PROTO_NAMES)} or a number")
        return [(PROTO_NAMES[spec.lower()], full)]
    if field == "dir" and isinstance(spec, str):
        d = {"forward": 0, "reverse": 1}.get(spec)
        if d is None:
            raise ConfigError(f"{where}: dir {spec!r}", "use forward/reverse or 0/1")
        return [(d, full)]
    if isinstance(spec, int) and not isinstance(spec, bool):
        return [(check(spec, "value"), full)]
    if isinstance(spec, dict):
        keys = set(spec)
        if keys == {"value", "mask"}:
            v, m = check(spec["value"], "value"), check(spec["mask"], "mask")
            return [(v & m, m)]
        if keys <= {"min", "max"} and keys:
            lo, hi = check(spec.get("min", 0), "min"), check(spec.get("max", full), "max")
            if lo > hi:
                raise ConfigError(f"{where}: {field} min {lo} > max {hi}", "swap them")
            return _range_to_prefixes(lo, hi, width)
        if field == "tcp_flags" and keys <= {"set", "unset"} and keys:
            try:
                s = sum(TCP_FLAG_BITS[f] for f in spec.get("set", []))
                u = sum(TCP_FLAG_BITS[f] for f in spec.get("unset", []))
            except KeyError as e:
                raise ConfigError(f"{where}: unknown TCP flag {e}", f"use {sorted(TCP_FLAG_BITS)}") from None
            return [(s, s | u)]
    raise ConfigError(f"{where}: cannot read {field}: {spec!r}",
                      "use an integer, {value: V, mask: M}, {min: A, max: B}"
                      + (" or {set: [...], unset: [...]}" if field == "tcp_flags" else ""))


# dict[str, Any]: YAML in: a rule's match as the rules file gives it
def compile_match(match: dict[str, Any], where: str) -> list[TernaryEntry]:
    """Ternary entries whose union is the rule's match (cross product of field alternatives)."""
    per_field: list[list[tuple[str, int, int]]] = []
    for f, spec in match.items():
        if f == "port":
            alts = _field_alternatives("sport", spec, where)
            per_field.append([("sport", v, m) for v, m in alts] + [("dport", v, m) for v, m in alts])
        else:
            per_field.append([(f, v, m) for v, m in _field_alternatives(f, spec, where)])
    entries = []
    for combo in itertools.product(*per_field) if per_field else [()]:
        value = [0] * len(KEY_FIELDS)
        mask = [0] * len(KEY_FIELDS)
        ok = True
        for f, v, m in combo:
            i = FIELD_INDEX[f]
            if mask[i] and (v & mask[i] & m) != (value[i] & m & mask[i]):
                ok = False  # contradictory (e.g. port on both sides with different values)
            value[i] |= v & m
            mask[i] |= m
        if ok:
            entries.append(TernaryEntry(tuple(value), tuple(mask)))
    return entries


#: the soft rule a compile with ``compile.prior_logits`` adds: a match-everything entry whose weights are a
#: control-plane class bias (zero at compile time)
PRIOR_RULE = "class_prior"


@dataclass
class Rules:
    """A parsed rule file plus where it came from."""

    path: str
    hard: list[RuleSpec]
    soft: list[RuleSpec]

    def hard_entries(self, classes: list[str]) -> tuple[list[tuple[TernaryEntry, int, int]], list[str]]:
        """(entry, rule index, label index) in priority order, and the names of rules skipped
        because their label is not a class of this dataset."""
        out, skipped = [], []
        for r_i, r in enumerate(self.hard):
            if r.label not in classes:
                skipped.append(r.name)
                continue
            for e in compile_match(r.match, f"{self.path}: hard rule '{r.name}'"):
                out.append((e, r_i, classes.index(r.label)))
        return out, skipped

    def hard_table(self, classes: list[str]) -> RuleTable:
        """The installable hard rules as a ternary table (the artifact's ``hard``), in priority order."""
        entries, _ = self.hard_entries(classes)
        return _rule_table([e for e, _, _ in entries], [r for _, r, _ in entries], [y for _, _, y in entries])

    def with_prior_rule(self) -> "Rules":
        """These rules and one more soft rule that matches every parsed packet (``PRIOR_RULE``): its per-class
        weights are a class bias the control plane sets live (chimera.controlplane.prior), through the fusion's
        soft term, so the dataplanes' integer semantics stay as they are."""
        if any(r.name == PRIOR_RULE for r in self.soft):
            return self
        return Rules(self.path, list(self.hard), [*self.soft, RuleSpec(name=PRIOR_RULE, match={})])

    def soft_entries(self) -> list[list[TernaryEntry]]:
        return [compile_match(r.match, f"{self.path}: soft rule '{r.name}'") for r in self.soft]

    def soft_table(self) -> RuleTable:
        """The soft rules' entries as a ternary table (the artifact's ``soft_entries``), grouped by rule."""
        ents = [(e, r) for r, es in enumerate(self.soft_entries()) for e in es]
        return _rule_table([e for e, _ in ents], [r for _, r in ents], None)

    def hard_precision(self, classes: list[str], keys: np.ndarray, y: np.ndarray) -> dict[str, tuple[int, float]]:
        """Per installable hard rule: (packets it decides, i.e. is the first match for, precision on them)."""
        entries, _ = self.hard_entries(classes)
        out: dict[str, tuple[int, float]] = {}
        if not entries:
            return out
        idx = first_match(keys, np.array([e.value for e, _, _ in entries]), np.array([e.mask for e, _, _ in entries]))
        rule_of = np.array([r for _, r, _ in entries])
        label_of = np.array([lab for _, _, lab in entries])
        hit = idx >= 0
        for r in sorted(set(rule_of.tolist())):
            m = hit & (rule_of[np.maximum(idx, 0)] == r)
            n = int(m.sum())
            out[self.hard[r].name] = (n, float(np.mean(y[m] == label_of[idx[m]])) if n else float("nan"))
        return out

    def without_hard(self, names: list[str]) -> "Rules":
        """The same rules less the named hard rules."""
        return Rules(self.path, [r for r in self.hard if r.name not in names], list(self.soft))

    def soft_fires(self, keys: np.ndarray) -> np.ndarray:
        """[N, R] bool: which soft rules fire on each rule key (what the weights are learned from)."""
        t = self.soft_table()
        return fires_by_group(keys, t.value, t.mask, t.rule, len(self.soft))

    def hard_labels(self, classes: list[str], keys: np.ndarray) -> np.ndarray:
        """Label forced by the first matching hard rule per key, -1 where none (the float-side veto)."""
        entries, _ = self.hard_entries(classes)
        if not entries:
            return np.full(np.asarray(keys).shape[0], -1, np.int64)
        idx = first_match(keys, np.array([e.value for e, _, _ in entries]), np.array([e.mask for e, _, _ in entries]))
        lab = np.array([y for _, _, y in entries])
        return np.where(idx >= 0, lab[np.maximum(idx, 0)], -1)


def _rule_table(entries: list[TernaryEntry], rule: list[int], label: list[int] | None) -> RuleTable:
    n, k = len(entries), len(KEY_FIELDS)
    value = np.asarray([e.value for e in entries], np.int64).reshape(n, k)
    mask = np.asarray([e.mask for e in entries], np.int64).reshape(n, k)
    return RuleTable(value, mask, np.asarray(rule, np.int64).reshape(n),
                     None if label is None else np.asarray(label, np.int64).reshape(n))


def load_rules(path: str | Path) -> Rules:
    """Parse and validate a rule file; errors name the file, the rule and the field."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: rule file not found", "check the experiment's 'rules:' path")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{p}: YAML syntax error{at}: {getattr(e, 'problem', e)}", "fix the YAML") from None
    try:
        rf = RuleFile.model_validate(raw or {})
    except ValidationError as e:
        raise ConfigError(f"{p}: invalid rule file: {validation_problems(e)}",
                          "see chimera/rules/spec.py for the format (fields: version, hard, soft)") from None
    for r in rf.hard:
        if not r.label:
            raise ConfigError(f"{p}: hard rule '{r.name}' has no label", "hard rules force a label: add 'label:'")
    for r in rf.soft:
        if r.label:
            raise ConfigError(f"{p}: soft rule '{r.name}' has a label",
                              "soft rules get learned per-class weights; remove 'label:' or make it hard")
    names = [r.name for r in rf.hard + rf.soft]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{p}: duplicate rule names {dup}", "give every rule a unique name")
    rules = Rules(str(p), rf.hard, rf.soft)
    rules.hard_entries([r.label for r in rf.hard if r.label])  # compile once to surface field errors now
    rules.soft_entries()
    return rules


def rule_keys(proto: np.ndarray, tcp_flags: np.ndarray, direction: np.ndarray, flow_pkts: np.ndarray,
              sport: np.ndarray, dport: np.ndarray, ip_len: np.ndarray) -> np.ndarray:
    """[N, 7] int64 rule keys (flow_pkts saturates at 255, as in the dataplane)."""
    return np.column_stack([proto, tcp_flags, direction, np.minimum(flow_pkts, FLOW_PKTS_SATURATION),
                            sport, dport, ip_len]).astype(np.int64)
