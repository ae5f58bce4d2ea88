"""The Tofino target without its compiler: the generated TNA program against the v1model program's contract.

The TNA program is cut from chimera.p4 (headers, actions, tables) and completed with TNA's parsers, registers and
apply block. After the C preprocessor, its tables must be the schema's, key for key, with v1model's ingress port
renamed to TNA's; its registers must be sized by the artifact; each RegisterAction must be applied once. The
compiler itself runs in the resources experiment where it is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from chimera.compile.header import render as render_header
from chimera.errors import ToolMissingError
from chimera.targets import registry
from chimera.targets.base import CapabilityError
from chimera.targets.bmv2.schema import TABLES
from chimera.targets.tofino import TofinoTarget
from chimera.targets.tofino.program import TABLES as TABLE_MARKERS, V1MODEL_SOURCE, ProgramError, Sizes, region, render

from test_p4 import _artifact


def _preprocess(tmp: Path, text: str, header: str) -> str:
    cpp = shutil.which("cpp")
    if cpp is None:
        pytest.skip("the C preprocessor (cpp) is not installed")
    (tmp / "chimera_constants.h").write_text(header)
    (tmp / "core.p4").write_text("")
    (tmp / "tna.p4").write_text("")  # the compiler's includes are not here; the declarations we check are ours
    (tmp / "chimera_tna.p4").write_text(text)
    r = subprocess.run([cpp, "-P", "-undef", f"-I{tmp}", str(tmp / "chimera_tna.p4")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return re.sub(r"\s+", " ", r.stdout)


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> tuple[Sizes, str]:
    art = _artifact()
    return Sizes.of(art), _preprocess(tmp_path_factory.mktemp("tna"), render(art), render_header(art))


def test_the_tables_are_the_v1model_contract(program: tuple[Sizes, str]) -> None:
    _, text = program
    found = re.findall(r"@id\((0x[0-9a-fA-F]+)\) table (\w+) \{ (?:key = \{(.*?)\} )?actions = \{(.*?)\}", text)
    by_name = {t.name: t for t in TABLES}
    assert sorted(n for _, n, _, _ in found) == sorted(by_name)
    for tid, name, keys, actions in found:
        t = by_name[name]
        assert int(tid, 16) == t.id
        ks = re.findall(r"([\w.]+): (\w+) @name\(\"(\w+)\"\);", keys)
        assert [(n, m.upper()) for _, m, n in ks] == [(k.name, k.match) for k in t.keys], name
        assert "sm." not in keys, f"{name} still keys on v1model's standard_metadata"
        assert [a.strip() for a in actions.split(";") if a.strip()] == list(t.actions), name
    assert "ig_intr_md.ingress_port: exact" in text and "ig_tm_md.ucast_egress_port = port" in text


def test_registers_are_sized_by_the_artifact(program: tuple[Sizes, str]) -> None:
    s, text = program
    regs = dict((n, (int(w), int(size))) for w, size, n in
                re.findall(r"Register<bit<(\d+)>, bit<32>>\((\d+)\) (\w+);", text))
    assert {f"reg_s_{j}_{e}" for j in range(s.m) for e in range(s.d_v)} <= set(regs)
    assert f"reg_s_{s.m}_0" not in regs and f"reg_s_0_{s.d_v}" not in regs
    assert {f"reg_ema_{k}" for k in range(s.centroids)} <= set(regs) and f"reg_ema_{s.centroids}" not in regs
    assert regs["reg_sig"] == (32, s.flow_slots) and regs["reg_ring_a"] == (32, s.flow_slots * s.window)
    assert all(w <= 32 for w, _ in regs.values()), "a Tofino register holds at most 32 bits"
    assert "register<" not in text, "a v1model register is left in the TNA program"


def test_each_register_action_is_applied_once(program: tuple[Sizes, str]) -> None:
    _, text = program
    actions = re.findall(r"RegisterAction<[^>]*>, bit<32>, bit<\d+>>\((\w+)\) (\w+) =", text)
    body = text[text.index(" apply { port_map.apply();"):]
    assert actions
    for _, name in actions:
        assert len(re.findall(rf"\b{name}\.execute\(", body)) == 1, name
    # the state the v1model program reads and writes every packet is all there
    regs = {r for r, _ in actions}
    for r in ("reg_sig", "reg_pkts", "reg_last", "reg_orient", "reg_head", "reg_ring_a", "reg_ring_b",
              "reg_sample", "reg_parsed", "reg_evictions", "reg_new_flows", "reg_unparsed", "reg_samples"):
        assert r in regs, r


def test_a_moved_marker_names_the_fix(tmp_path: Path) -> None:
    src = tmp_path / "chimera.p4"
    src.write_text(V1MODEL_SOURCE.read_text().replace(TABLE_MARKERS[0], "    action nop_renamed()"))
    with pytest.raises(ProgramError, match="markers"):
        render(_artifact(), src)
    with pytest.raises(ProgramError):
        region("a\nb\n", ("a", "z"))


def test_a_compile_only_target() -> None:
    """Never chosen for a testbed run, and it refuses to classify, naming the targets that do."""
    assert TofinoTarget.auto_rank is None and not TofinoTarget.capabilities
    assert registry.target_class("tofino") is TofinoTarget
    with pytest.raises(CapabilityError, match="classifies no traffic"):
        TofinoTarget().run(None, None, Path("."), "x", replay=None)  # type: ignore[arg-type]
    why = TofinoTarget.unavailable_reason()
    if why is not None:
        assert "PATH" in why
        with pytest.raises(ToolMissingError, match="scripts/build-tofino-compiler"):
            TofinoTarget.require_available()
