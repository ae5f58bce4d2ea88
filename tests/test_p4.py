"""The P4 target without a switch: source <-> schema <-> committed P4Info, and message construction.

chimera.p4 is run through the C preprocessor (as p4c does) with a constants
header; every @id-pinned table, action and register, every key and parameter
is then compared with the schema the P4Runtime layer uses and with the
committed P4Info. BMv2 itself is exercised in test_bmv2.py where installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from finsy import P4Schema

from chimera.compile.header import render
from chimera.errors import TargetError
from chimera.formats.coverage import N_POINTS
from chimera.targets.bmv2 import p4rt
from chimera.targets.bmv2.compiler import compiled_in
from chimera.targets.bmv2.schema import (ACTIONS, P4INFO, P4_SOURCE, REGISTERS, TABLE_BY_NAME, TABLES, qualified,
                                         render_p4info)

from test_reference import random_artifact

WIDTHS = {"meta.ver": 1, "sm.ingress_port": 9, "meta.ip_len": 16, "meta.tflags": 8, "meta.mkey": 16,
          "meta.c": 8, "meta.c_out": 8, "meta.pclass": 8, "meta.proto": 8, "meta.dir8": 8, "meta.pkts8": 8,
          "meta.sport": 16, "meta.dport": 16, "meta.val_len_in": 16, "meta.val_len_out": 16,
          **{f"meta.{n}_{io}": 8 for n in ("val_iat", "val_flags", "val_port", "val_index") for io in ("in", "out")}}


def _artifact():
    art = random_artifact(4, C=20, Y=5, L=8, F=1024)
    art.constants.update({"HARD_ENTRIES": len(art.hard), "SOFT_ENTRIES": len(art.soft_entries), "FLAG_CLASSES": 8,
                          "IAT_BUCKETS": 16, "IAT_SHIFT": 10, "PROTO_CLASSES": 4, "MAP_KEYS": 8192,
                          "FLOW_PKTS_SAT": 255, "VFLAG_HARD_VETO": 1,
                          "VFLAG_UNPARSED": 2, "VFLAG_EVICTED": 4, "VFLAG_NEW_FLOW": 8, "VFLAG_GLOBAL_HIT": 16})
    return art


@pytest.fixture(scope="module")
def preprocessed(tmp_path_factory: pytest.TempPathFactory) -> str:
    cpp = shutil.which("cpp")
    if cpp is None:
        pytest.skip("the C preprocessor (cpp) is not installed")
    d = tmp_path_factory.mktemp("p4")
    (d / "chimera_constants.h").write_text(render(_artifact()))
    (d / "core.p4").write_text("")  # p4c's includes are not here; the declarations we check are ours
    (d / "v1model.p4").write_text("")
    # beside its header, as compile_p4 does: a quoted include looks in the source's directory first
    shutil.copyfile(P4_SOURCE, d / P4_SOURCE.name)
    r = subprocess.run([cpp, "-P", "-undef", f"-I{d}", str(d / P4_SOURCE.name)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return re.sub(r"\s+", " ", r.stdout)


def test_committed_p4info_is_current() -> None:
    assert P4INFO.read_text() == render_p4info(), "run: invoke p4info (regenerates p4/chimera.p4info.txtpb)"


def test_tables_match_the_source(preprocessed: str) -> None:
    found = re.findall(r"@id\((0x[0-9a-fA-F]+)\) table (\w+) \{ (?:key = \{(.*?)\} )?actions = \{(.*?)\}"
                       r".*?size = ([\w*]+);", preprocessed)
    assert len(found) == len(TABLES)
    for tid, name, keys, actions, _size in found:
        t = TABLE_BY_NAME[name]
        assert int(tid, 16) == t.id, name
        ks = re.findall(r"([\w.]+): (\w+) @name\(\"(\w+)\"\);", keys)
        assert [(n, m.upper()) for _, m, n in ks] == [(k.name, k.match) for k in t.keys], name
        assert [WIDTHS[e] for e, _, _ in ks] == [k.bitwidth for k in t.keys], name
        assert [a.strip() for a in actions.split(";") if a.strip()] == list(t.actions), name


def test_actions_and_registers_match_the_source(preprocessed: str) -> None:
    acts = dict((n, (int(i, 16), p)) for i, n, p in re.findall(r"@id\((0x[0-9a-fA-F]+)\) action (\w+)\((.*?)\)",
                                                                preprocessed))
    assert set(acts) == {a.name for a in ACTIONS}
    for a in ACTIONS:
        aid, params = acts[a.name]
        assert aid == a.id
        got = re.findall(r"bit<(\d+)> (\w+)", params)
        assert [(n, int(w)) for w, n in got] == [(p.name, p.bitwidth) for p in a.params], a.name
    regs = re.findall(r"@id\((0x[0-9a-fA-F]+)\) register<bit<(\d+)>>\(([\w*]+)\) (\w+);", preprocessed)
    sizes = {"1": 1, "8": 8, "16": 16, "65536": 65536, "1048576": 1048576, "64": 64, str(N_POINTS): N_POINTS}
    assert {(int(i, 16), int(w), sizes[s], n) for i, w, s, n in regs} == {
        (r.id, r.bitwidth, r.size, r.name) for r in REGISTERS}


def test_verdict_header_matches_the_format_module(preprocessed: str) -> None:
    """After the preprocessor, chimera.p4's verdict_t has exactly FIELDS: names, widths, order."""
    from chimera.formats.verdict import FIELDS
    body = re.search(r"header verdict_t \{(.*?)\}", preprocessed).group(1)
    fields = [(n, int(w)) for w, n in re.findall(r"bit<(\d+)> (\w+);", body)]
    assert fields == [(f.name, f.bits) for f in FIELDS]


def test_every_entry_encodes_against_the_p4info() -> None:
    art = _artifact()
    s = P4Schema(P4INFO)
    entries = p4rt.model_entries(art, 1)
    msgs = [e.encode(s) for e in entries]
    per_table: dict[str, int] = {}
    for e in entries:
        per_table[e.table_id] = per_table.get(e.table_id, 0) + 1
    assert per_table[qualified("map_exact")] == 16384
    assert per_table[qualified("len_range")] == 16 and per_table[qualified("len_fine_range")] == 8
    assert per_table[qualified("val_len_in")] == per_table[qualified("val_len_out")] == 16
    assert per_table[qualified("val_port_in")] == 128 and per_table[qualified("phi")] == 20
    assert per_table[qualified("port_vocab_sport")] == per_table[qualified("port_vocab_dport")] == len(art.port_vocab)
    assert per_table[qualified("w_out")] == 1
    assert per_table.get(qualified("hard_rules"), 0) == len(art.hard)
    assert sum(v for k, v in per_table.items() if ".soft_" in k) == len(art.soft_entries)
    for e, m in zip(entries, msgs):
        tbl = TABLE_BY_NAME[e.table_id.split(".")[1]]
        assert m.table_entry.table_id == tbl.id
        if any(k.match in ("TERNARY", "RANGE") for k in tbl.keys):
            assert m.table_entry.priority > 0
    # wildcards are omitted, exact version key always present
    for m in msgs:
        assert m.table_entry.match[0].field_id == 1
    p4rt.flip_entry(0).encode(s)
    p4rt.port_entries([(1, 2), (2, 1)])[1].encode(s)


def test_pack_classes_round_trip() -> None:
    v = np.array([-1, 5, -(2**31), 2**31 - 1, 0])
    packed = p4rt.pack_classes(v)
    back = [((packed >> (32 * i)) & 0xFFFFFFFF) for i in range(5)]
    assert [x - (1 << 32) if x >= 1 << 31 else x for x in back] == v.tolist()


def test_unsupported_artifacts_fail_with_the_reason() -> None:
    art = _artifact()
    art.constants["NUM_CLASSES"] = 17
    with pytest.raises(TargetError, match="NUM_CLASSES=17 exceeds chimera.p4's maximum 16"):
        p4rt.model_entries(art, 0)


def test_committed_constants_header_is_current() -> None:
    """p4/chimera_constants.h (so `p4c-bm2-ss p4/chimera.p4` compiles from a clean clone) holds what chimera.p4
    compiles in for the quickstart model: regenerate it with `invoke p4header` when this fails."""
    from builders import quickstart_artifact
    committed = (P4_SOURCE.parent / "chimera_constants.h").read_text()
    current = render(quickstart_artifact().art)  # epochs change no compiled-in constant
    assert compiled_in(committed) == compiled_in(current), "stale: run `invoke p4header`"
    assert compiled_in(committed).count("#define") >= 15
