"""The verdict header (one definition: bytes, widths, every derived form, round trip) and the table artifact."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from chimera.formats.artifact import Artifact
from chimera.compile.header import render
from chimera.errors import ConfigError
from chimera.formats import verdict
from chimera.formats.verdict import ETH_P_VERDICT, FIELDS, VERDICT_LEN, VERDICT_STRUCT, Verdict, strip

from test_reference import random_artifact

ROOT = Path(__file__).resolve().parents[1]


def test_verdict_default_bytes_and_width() -> None:
    raw = bytes(Verdict())
    assert len(raw) == VERDICT_LEN == VERDICT_STRUCT.size == 30
    assert raw == bytes([1, 0, 0xFF, 0xFF]) + bytes(4) + bytes(2) + bytes(2) + bytes(16) + b"\x08\x00"


def test_every_form_of_the_verdict_layout_derives_from_fields() -> None:
    """struct, scapy, C and P4 forms all come from FIELDS: same names, same widths, same order."""
    want = [(f.name, f.bits) for f in FIELDS]
    assert sum(b for _, b in want) == 8 * VERDICT_LEN == 240
    codes = {"B": 8, "H": 16, "I": 32, "Q": 64}
    assert [codes[c] for c in VERDICT_STRUCT.format.lstrip("!")] == [b for _, b in want]
    scapy = [(f.name, len(f.addfield(Verdict(), b"", f.default)) * 8) for f in Verdict.fields_desc]
    assert scapy == want
    c_types = {"__u8": 8, "__u16": 16, "__u32": 32, "__u64": 64}
    c = [tuple(x.split()) for x in verdict.c_fields().rstrip(";").split("; ")]
    assert [(n, c_types[t]) for t, n in c] == want
    p4 = re.findall(r"bit<(\d+)> (\w+);", verdict.p4_fields())
    assert [(n, int(w)) for w, n in p4] == want


def test_sources_use_the_generated_verdict_fields() -> None:
    """The eBPF struct and the P4 header are the generated lists, with nothing written by hand beside them."""
    h = render(random_artifact(2))
    assert f"#define CHIMERA_VERDICT_FIELDS_C {verdict.c_fields()}\n" in h
    assert f"#define CHIMERA_VERDICT_FIELDS_P4 {verdict.p4_fields()}\n" in h
    c_src = (ROOT / "chimera" / "targets" / "ebpf" / "chimera.bpf.c").read_text()
    assert re.search(r"struct verdict_hdr \{\s*CHIMERA_VERDICT_FIELDS_C\s*\}", c_src)
    p4_src = (ROOT / "p4" / "chimera.p4").read_text()
    assert re.search(r"header verdict_t \{\s*CHIMERA_VERDICT_FIELDS_P4\s*\}", p4_src)


def test_verdict_pack_uses_the_layer_defaults() -> None:
    assert verdict.pack() == bytes(Verdict())
    assert strip(bytes(12) + ETH_P_VERDICT.to_bytes(2, "big") + verdict.pack(label=4, score=9))[0][2] == 4


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
    art = random_artifact(1)
    p = tmp_path / "a.json"
    sha = art.save(p)
    back = Artifact.load(p)
    assert back.sha256 == sha and back.constants == art.constants
    for name in Artifact.ARRAYS:
        assert np.array_equal(getattr(back, name), getattr(art, name)), name
    body = json.loads(p.read_text())
    body["constants"]["ALPHA"] += 1
    p.write_text(json.dumps(body))
    with pytest.raises(ConfigError, match="does not match its sha256"):
        Artifact.load(p)


@pytest.mark.parametrize("content, match", [
    ("{not json", "not a table artifact"),
    ('{"format": "chimera-artifact/1"}', "format 'chimera-artifact/1', expected"),
    ("[1, 2]", "format 'list'"),
])
def test_corrupt_artifacts_are_named_errors(tmp_path: Path, content: str, match: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ConfigError, match=match) as ei:
        Artifact.load(p)
    assert str(p) in str(ei.value) and "fix:" in str(ei.value)


def test_header_has_every_constant() -> None:
    art = random_artifact(2)
    h = render(art)
    for k, v in art.constants.items():
        assert f"#define CHIMERA_{k} {v}\n" in h
    assert h.count("#ifndef CHIMERA_CONSTANTS_H") == 1
