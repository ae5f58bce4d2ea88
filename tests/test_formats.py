"""The wire formats (the verdict header and the trace-time shim: one definition each, every derived form, round
trips) and the table artifact (named table views, round trip, tamper)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from chimera.compile.header import render
from chimera.errors import ConfigError
from chimera.formats import shim, verdict
from chimera.formats.artifact import Artifact, GlobalTable, RuleTable
from chimera.formats.layout import HeaderLayout
from chimera.formats.shim import ETH_P_SHIM, SHIM_LEN, Shim
from chimera.formats.verdict import ETH_P_VERDICT, NO_SEQ, VERDICT_LEN, VERDICT_STRUCT, Verdict, strip

from test_reference import random_artifact

ROOT = Path(__file__).resolve().parents[1]
#: (layout, its scapy layer, its module, the name its C/P4 field-list macros carry, the C struct, the P4 header)
FORMATS = [(verdict.LAYOUT, Verdict, verdict, "VERDICT", "verdict_hdr", "verdict_t"),
           (shim.LAYOUT, Shim, shim, "SHIM", "shim_hdr", "shim_t")]


def test_verdict_default_bytes_and_width() -> None:
    raw = bytes(Verdict())
    assert len(raw) == VERDICT_LEN == VERDICT_STRUCT.size == 34
    assert raw == (bytes([2, 0, 0xFF, 0xFF]) + bytes(4) + bytes(2) + bytes(2) + b"\xff" * 4 + bytes(16)
                   + b"\x08\x00")


def test_shim_default_bytes_and_width() -> None:
    raw = bytes(Shim())
    assert len(raw) == SHIM_LEN == 16
    assert raw == bytes([1, 0]) + bytes(4) + bytes(8) + b"\x08\x00"


@pytest.mark.parametrize("layout, layer, mod, macro, c_struct, p4_header", FORMATS, ids=["verdict", "shim"])
def test_every_form_of_a_layout_derives_from_its_fields(layout: HeaderLayout, layer: type, mod: object, macro: str,
                                                        c_struct: str, p4_header: str) -> None:
    """struct, scapy, C and P4 forms all come from the layout's fields: same names, same widths, same order."""
    want = [(f.name, f.bits) for f in layout.fields]
    assert sum(b for _, b in want) == 8 * layout.length
    codes = {"B": 8, "H": 16, "I": 32, "Q": 64}
    assert [codes[c] for c in layout.struct.format.lstrip("!")] == [b for _, b in want]
    scapy = [(f.name, len(f.addfield(layer(), b"", f.default)) * 8) for f in layer.fields_desc]
    assert scapy == want
    assert bytes(layer()) == layout.pack()
    c_types = {"__u8": 8, "__u16": 16, "__u32": 32, "__u64": 64}
    c = [tuple(x.split()) for x in layout.c_fields().rstrip(";").split("; ")]
    assert [(n, c_types[t]) for t, n in c] == want
    p4 = re.findall(r"bit<(\d+)> (\w+);", layout.p4_fields())
    assert [(n, int(w)) for w, n in p4] == want


@pytest.mark.parametrize("layout, layer, mod, macro, c_struct, p4_header", FORMATS, ids=["verdict", "shim"])
def test_sources_use_the_generated_fields(layout: HeaderLayout, layer: type, mod: object, macro: str, c_struct: str,
                                          p4_header: str) -> None:
    """The eBPF struct and the P4 header are the generated lists (with the generated EtherType and length), with
    nothing written by hand beside them."""
    h = render(random_artifact(2))
    assert f"#define CHIMERA_{macro}_FIELDS_C {layout.c_fields()}\n" in h
    assert f"#define CHIMERA_{macro}_FIELDS_P4 {layout.p4_fields()}\n" in h
    assert f"#define CHIMERA_{macro}_ETHERTYPE {layout.ethertype}\n" in h
    assert f"#define CHIMERA_{macro}_LEN {layout.length}\n" in h
    c_src = (ROOT / "chimera" / "targets" / "ebpf" / "chimera.bpf.c").read_text()
    assert re.search(rf"struct {c_struct} \{{\s*CHIMERA_{macro}_FIELDS_C\s*\}}", c_src)
    assert f"sizeof(struct {c_struct}) == CHIMERA_{macro}_LEN" in c_src
    p4_src = (ROOT / "p4" / "chimera.p4").read_text()
    assert re.search(rf"header {p4_header} \{{\s*CHIMERA_{macro}_FIELDS_P4\s*\}}", p4_src)
    # nothing hand-written: no literal EtherType of either format in the dataplane sources
    for src in (c_src, p4_src):
        assert f"0x{layout.ethertype:04x}" not in src.lower()


def test_committed_header_carries_the_current_formats() -> None:
    """p4/chimera_constants.h (what a clean-clone p4c compile reads) has this version's format defines."""
    h = (ROOT / "p4" / "chimera_constants.h").read_text()
    for layout, _, _, macro, _, _ in FORMATS:
        assert f"#define CHIMERA_{macro}_FIELDS_P4 {layout.p4_fields()}\n" in h
        assert f"#define CHIMERA_{macro}_LEN {layout.length}\n" in h


def test_verdict_pack_uses_the_layer_defaults() -> None:
    assert verdict.pack() == bytes(Verdict())
    assert strip(bytes(12) + ETH_P_VERDICT.to_bytes(2, "big") + verdict.pack(label=4, score=9))[0][2] == 4
    with pytest.raises(KeyError):
        verdict.pack(no_such_field=1)


def test_verdict_round_trip_recovers_original_frame() -> None:
    orig = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(dst="10.0.0.2") / UDP(dport=9) / b"hi"
    ob = bytes(orig)
    vals = (2, 0x09, 3, 0xFF, 12345, 7, 5, 0, 42, 111, 222, 0x0800)
    marked = ob[:12] + ETH_P_VERDICT.to_bytes(2, "big") + VERDICT_STRUCT.pack(*vals) + ob[14:]
    fields, back = strip(marked)
    assert back == ob
    assert fields == vals
    pkt = Ether(marked)
    assert pkt[Verdict].label == 3 and pkt[Verdict].score == 12345 and pkt[Verdict].seq == 42
    assert pkt[UDP].dport == 9
    with pytest.raises(ValueError):
        strip(ob)


def test_shim_round_trip_and_frames_that_cannot_carry_one() -> None:
    ob = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(dst="10.0.0.2") / UDP(dport=9) / b"x")
    s = shim.insert(ob, 7, 123456789)
    assert len(s) == len(ob) + SHIM_LEN and s[12:14] == ETH_P_SHIM.to_bytes(2, "big")
    fields, back = shim.strip(s)
    assert back == ob and fields["index"] == 7 and fields["trace_ns"] == 123456789 and fields["orig_type"] == 0x0800
    pkt = Ether(s)
    assert pkt[Shim].index == 7 and pkt[UDP].dport == 9
    arp = bytes(Ether(type=0x0806)) + bytes(28)
    assert shim.strip(shim.insert(arp, 1, 2))[1] == arp  # any EtherType travels in orig_type
    assert shim.insert(b"\x01" * 13, 0, 0) == b"\x01" * 13  # shorter than Ethernet: no shim
    assert NO_SEQ == 0xFFFFFFFF


def test_trace_origin_keeps_every_inter_arrival_unit() -> None:
    """The origin is a multiple of 2^ORIGIN_ALIGN_BITS: (t - origin) >> IAT_SHIFT differs from t >> IAT_SHIFT by a
    constant, so every per-flow inter-arrival in 32-bit units is the same on both clocks."""
    from chimera.data.tokens import IAT_SHIFT, ts_units
    rng = np.random.default_rng(5)
    ts = np.sort(rng.integers(1_700_000_000 * 10**9, 1_700_000_000 * 10**9 + 10**14, 5000))
    o = shim.trace_origin(ts)
    assert o <= ts.min() and o % (1 << shim.ORIGIN_ALIGN_BITS) == 0 and IAT_SHIFT <= shim.ORIGIN_ALIGN_BITS
    a, b = rng.integers(0, ts.size, (2, 3000))
    assert np.array_equal((ts_units(ts[a]) - ts_units(ts[b])) & 0xFFFFFFFF,
                          (ts_units(ts[a] - o) - ts_units(ts[b] - o)) & 0xFFFFFFFF)


def test_rule_and_global_tables_have_one_layout() -> None:
    """The named views read and write the stored arrays: a round trip is the identity."""
    art = random_artifact(4)
    for stored, view in ((art.hard, art.hard_rules), (art.soft_entries, art.soft_rules)):
        assert np.array_equal(view.stored().reshape(stored.shape), stored)
    assert np.array_equal(art.global_table.stored(), art.global_entries.reshape(art.global_table.stored().shape))
    gt = GlobalTable.of(art.global_entries, len(art.classes))
    assert gt.g.shape == (len(gt), len(art.classes))
    rt = RuleTable(np.ones((2, 7), np.int64), np.zeros((2, 7), np.int64), np.array([0, 1]), np.array([3, 4]))
    back = RuleTable.of(rt.stored(), labelled=True)
    for f in ("value", "mask", "rule", "label"):
        assert np.array_equal(getattr(back, f), getattr(rt, f)), f


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
