"""The verdict header (bytes, widths, round trip) and the table artifact (hash, tamper detection)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from chimera.compile.artifact import Artifact
from chimera.compile.header import render
from chimera.errors import ConfigError
from chimera.formats.verdict import ETH_P_VERDICT, VERDICT_LEN, VERDICT_STRUCT, Verdict, strip

from test_reference import random_artifact


def test_verdict_default_bytes_and_width() -> None:
    raw = bytes(Verdict())
    assert len(raw) == VERDICT_LEN == VERDICT_STRUCT.size == 30
    assert raw == bytes([1, 0, 0xFF, 0xFF]) + bytes(4) + bytes(2) + bytes(2) + bytes(16) + b"\x08\x00"


def test_verdict_round_trip_recovers_original_frame() -> None:
    orig = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(dst="10.0.0.2") / UDP(dport=9) / b"hi"
    ob = bytes(orig)
    marked = ob[:12] + ETH_P_VERDICT.to_bytes(2, "big") + VERDICT_STRUCT.pack(
        1, 0x09, 3, 0xFF, 12345, 7, 5, 0, 111, 222, 0x0800) + ob[14:]
    fields, back = strip(marked)
    assert back == ob
    assert fields == (1, 0x09, 3, 0xFF, 12345, 7, 5, 0, 111, 222, 0x0800)
    pkt = Ether(marked)
    assert pkt[Verdict].label == 3 and pkt[Verdict].score == 12345 and pkt[UDP].dport == 9
    with pytest.raises(ValueError):
        strip(ob)


def test_artifact_round_trip_and_tamper(tmp_path: Path) -> None:
    art = random_artifact(1, incremental=True)
    p = tmp_path / "a.json"
    sha = art.save(p)
    back = Artifact.load(p)
    assert back.sha256 == sha and back.constants == art.constants
    assert (back.window_p == art.window_p).all() and (back.incremental["phi_q"] == art.incremental["phi_q"]).all()
    body = json.loads(p.read_text())
    body["constants"]["ALPHA"] += 1
    p.write_text(json.dumps(body))
    with pytest.raises(ConfigError, match="does not match its sha256"):
        Artifact.load(p)


def test_header_has_every_constant() -> None:
    art = random_artifact(2)
    h = render(art)
    for k, v in art.constants.items():
        assert f"#define CHIMERA_{k} {v}\n" in h
    assert h.count("#ifndef CHIMERA_CONSTANTS_H") == 1
