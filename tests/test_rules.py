"""Rule files: parsing, every kind of error, ternary compilation, weight learning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chimera.errors import ConfigError
from chimera.rules.spec import _range_to_prefixes, compile_match, load_rules
from chimera.rules.ternary import first_match
from chimera.rules.weights import learn_soft_weights

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "rules.yaml"
    p.write_text(text)
    return p


def test_default_rule_file_loads() -> None:
    r = load_rules(ROOT / "rules" / "default.yaml")
    assert [x.name for x in r.hard] == ["syn_flood_no_options", "scan_probe_reset"]
    entries, skipped = r.hard_entries(["A", "SYN_FLOOD"])
    assert skipped == ["scan_probe_reset"] and {y for _, _, y in entries} == {1}


@pytest.mark.parametrize("text, match", [
    ("hard:\n  - name: a\n    label: X\n    match: {proto: tcp\n", r"YAML syntax error at line \d"),
    ("hard:\n  - {name: a, label: X, match: {colour: red}}\n", r"unknown match field\(s\) \['colour'\]"),
    ("hard:\n  - {name: a, match: {proto: tcp}}\n", "has no label"),
    ("soft:\n  - {name: a, label: X, match: {proto: tcp}}\n", "soft rule 'a' has a label"),
    ("soft:\n  - {name: a, match: {proto: tcp}}\n  - {name: a, match: {proto: udp}}\n", "duplicate rule names"),
    ("soft:\n  - {name: a, match: {proto: gre}}\n", "unknown protocol 'gre'"),
    ("soft:\n  - {name: a, match: {dport: 70000}}\n", r"not an integer in \[0, 65535\]"),
    ("soft:\n  - {name: a, match: {tcp_flags: {set: [SYNN]}}}\n", "unknown TCP flag"),
    ("soft:\n  - {name: a, match: {ip_len: {min: 9, max: 3}}}\n", "min 9 > max 3"),
    ("rules: []\n", "Extra inputs are not permitted"),
])
def test_rule_file_errors_name_file_and_field(tmp_path: Path, text: str, match: str) -> None:
    p = write(tmp_path, text)
    with pytest.raises(ConfigError, match=match) as ei:
        load_rules(p)
    assert str(p) in str(ei.value)


def test_missing_rule_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="rule file not found"):
        load_rules(tmp_path / "nope.yaml")


@given(st.integers(0, 65535), st.integers(0, 65535))
def test_range_prefixes_cover_exactly(a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    pref = _range_to_prefixes(lo, hi, 16)
    covered = np.zeros(65536, bool)
    x = np.arange(65536)
    for v, m in pref:
        hit = (x & m) == v
        assert not np.any(covered & hit)  # disjoint
        covered |= hit
    assert np.array_equal(covered, (x >= lo) & (x <= hi))
    assert len(pref) <= 30


def test_match_semantics() -> None:
    es = compile_match({"proto": "tcp", "port": 443, "tcp_flags": {"set": ["SYN"], "unset": ["ACK"]},
                        "flow_pkts": {"max": 3}}, "t")
    v, m = np.array([e.value for e in es]), np.array([e.mask for e in es])
    keys = np.array([[6, 0x02, 0, 1, 443, 5000, 60], [6, 0x02, 1, 2, 5000, 443, 60], [6, 0x12, 0, 1, 443, 1, 60],
                     [17, 0x02, 0, 1, 443, 1, 60], [6, 0x02, 0, 4, 443, 1, 60]])
    assert (first_match(keys, v, m) >= 0).tolist() == [True, True, False, False, False]


def test_soft_weights_learn_the_implied_class() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 3000)
    fires = np.column_stack([(y == 2) & (rng.uniform(size=y.size) < 0.9), rng.uniform(size=y.size) < 0.5])
    w = learn_soft_weights(fires, y, 3, seed=1)
    assert (w >= 0).all()
    assert np.argmax(w[0]) == 2 and w[0, 2] > 5 * max(w[1].max(), 1e-3)
