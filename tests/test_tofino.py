"""The Tofino target without its compiler: the generated TNA program against the v1model program's contract.

The TNA program is cut from chimera.p4 (headers, actions, tables) and completed with TNA's parsers, registers and
apply block. After the C preprocessor, its tables must be the schema's, key for key, with v1model's ingress port
renamed to TNA's; its registers must be sized by the artifact; each RegisterAction must be applied once. The
compiler itself runs in the resources experiment where it is installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chimera.compile.header import render as render_header
from chimera.errors import ToolMissingError
from chimera.targets import registry
from chimera.targets.base import Capability, CapabilityError
from chimera.targets.compile_only import CompileOnlyTarget, ResourceReport
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
    """Every array at the artifact's own size, indexed by a field of exactly its index width (Tofino refuses a
    wider index, or an expression, as "too complex for the primitive")."""
    s, text = program
    regs = {n: (int(w), int(i), int(size)) for w, i, size, n in
            re.findall(r"Register<bit<(\d+)>, bit<(\d+)>>\((\d+)\) (\w+);", text)}
    assert {f"reg_s_{j}_{e}" for j in range(s.m) for e in range(s.d_v)} <= set(regs)
    assert f"reg_s_{s.m}_0" not in regs and f"reg_s_0_{s.d_v}" not in regs
    assert regs["reg_centroid_hits"] == (32, 32, s.centroids) and regs["reg_class_hits"] == (32, 32, s.classes)
    assert {f"reg_class_ema_{y}" for y in range(s.classes)} <= set(regs) and f"reg_class_ema_{s.classes}" not in regs
    assert 2 ** s.slot_bits == s.flow_slots
    assert regs["reg_sig"] == (32, s.slot_bits, s.flow_slots) and regs["reg_s_0_0"][1:] == (s.slot_bits, s.flow_slots)
    assert regs["reg_ring_a"] == (32, s.ring_bits, s.flow_slots * s.window) and 2 ** s.ring_bits == s.flow_slots * s.window
    assert all(w <= 32 for w, _, _ in regs.values()), "a Tofino register holds at most 32 bits"
    assert all(size <= 2 ** i for _, i, size in regs.values())
    actions = re.findall(r"RegisterAction<bit<\d+>, bit<(\d+)>, bit<\d+>>\((\w+)\)", text)
    assert actions and all(int(i) == regs[r][1] for i, r in actions), "an action's index type is its array's"
    assert "register<" not in text, "a v1model register is left in the TNA program"
    assert "execute(meta.slot)" not in text and "execute(meta.ring_idx)" not in text


def test_each_register_action_is_applied_once(program: tuple[Sizes, str]) -> None:
    _, text = program
    actions = re.findall(r"RegisterAction<[^>]*>, bit<\d+>, bit<\d+>>\((\w+)\) (\w+) =", text)
    body = text[text.index(" apply { port_map.apply();"):]
    assert actions
    for _, name in actions:
        assert len(re.findall(rf"\b{name}\.execute\(", body)) == 1, name
    # the state the v1model program reads and writes every packet is all there
    regs = {r for r, _ in actions}
    for r in ("reg_sig", "reg_pkts", "reg_last", "reg_orient", "reg_head", "reg_ring_a", "reg_ring_b",
              "reg_sample", "reg_parsed", "reg_evictions", "reg_new_flows", "reg_unparsed", "reg_samples"):
        assert r in regs, r


def test_no_register_action_shifts(program: tuple[Sizes, str]) -> None:
    """A stateful ALU adds, subtracts and compares; it does not shift ("expression too complex for register
    action": v1model's EMA step). The EMAs are counted in the pipe and averaged by the control plane instead."""
    _, text = program
    bodies = re.findall(r"void apply\(inout bit<\d+> v, out bit<\d+> rv\) \{(.*?)\} \};", text)
    assert bodies
    assert not [b for b in bodies if "<<" in b or ">>" in b]
    assert "centroid_hit.execute((bit<32>)meta.c);" in text and "class_hit.execute((bit<32>)meta.label);" in text


TNA_PROBE = "#include <core.p4>\n#include <tna.p4>\n"


def _p4test_with_tna(tmp: Path) -> str:
    """p4c's p4test where it finds TNA's declarations (a p4c built with its Tofino backend), else skip."""
    p4test = shutil.which("p4test")
    if p4test is None:
        pytest.skip("p4test is not on PATH (it comes with p4c; scripts/build-tofino-compiler builds it)")
    (tmp / "probe.p4").write_text(TNA_PROBE)
    r = subprocess.run([p4test, "-D__TARGET_TOFINO__=1", str(tmp / "probe.p4")], capture_output=True, text=True)
    if r.returncode != 0 and "tna.p4" in r.stderr and "No such file" in r.stderr:
        pytest.skip("this p4test has no tna.p4 among its includes (a p4c built without the Tofino backend)")
    assert r.returncode == 0, f"p4test fails on a program that only includes core.p4 and tna.p4: {r.stderr[-2000:]}"
    return p4test


@pytest.mark.parametrize("which", ["chimera", "leo"])
def test_p4cs_frontend_accepts_it_against_the_real_tna_declarations(tmp_path: Path, which: str) -> None:
    """The whole TNA program, not only its declarations, through p4c's frontend and midend with the pinned
    tna.p4: a type or syntax error shows here without the Tofino backend, which takes a day of CPU to build."""
    p4test = _p4test_with_tna(tmp_path)
    art = _artifact()
    (tmp_path / "chimera_constants.h").write_text(render_header(art))
    if which == "leo":
        from chimera.targets.tofino import leo
        text = leo.render(_tree()[0], art)
    else:
        text = render(art)
    (tmp_path / "chimera_tna.p4").write_text(text)
    r = subprocess.run([p4test, "-D__TARGET_TOFINO__=1", f"-I{tmp_path}", str(tmp_path / "chimera_tna.p4")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not [ln for ln in r.stderr.splitlines() if "error" in ln.lower()], r.stderr[-3000:]
    assert "redefined" not in r.stderr, "the constants header defines a name twice"


def test_a_moved_marker_names_the_fix(tmp_path: Path) -> None:
    src = tmp_path / "chimera.p4"
    src.write_text(V1MODEL_SOURCE.read_text().replace(TABLE_MARKERS[0], "    action nop_renamed()"))
    with pytest.raises(ProgramError, match="markers"):
        render(_artifact(), src)
    with pytest.raises(ProgramError):
        region("a\nb\n", ("a", "z"))


def test_a_compile_only_target() -> None:
    """Never chosen for a testbed run, and it refuses to classify, naming the targets that do."""
    assert TofinoTarget.auto_rank is None and not TofinoTarget.capabilities and not TofinoTarget.can(Capability.TESTBED)
    assert issubclass(TofinoTarget, CompileOnlyTarget)
    assert registry.target_class("tofino") is TofinoTarget
    with pytest.raises(CapabilityError, match="classifies no traffic"):
        TofinoTarget().run(None, None, Path("."), "x", replay=None)  # type: ignore[arg-type]
    why = TofinoTarget.unavailable_reason()
    if why is not None:
        assert "PATH" in why
        with pytest.raises(ToolMissingError, match="scripts/build-tofino-compiler"):
            TofinoTarget.require_available()


def _report(version: str = "2.4.2") -> dict[str, Any]:
    """A resources.json in the backend's schema (2.x) for two stages of a 12-stage pipe: stage 0 holds a ternary
    table in 2 TCAMs and its action data in 1 SRAM; stage 1 an exact table in 3 SRAMs (one shared with a register's
    RegisterAction) and 1 stateful ALU."""
    def units(*names: str) -> list[dict[str, Any]]:
        return [{"row": 0, "column": i, "usages": [{"used_by": n, "used_for": "match_entry_ram"} for n in ns.split("+")]}
                for i, ns in enumerate(names)]
    stage: dict[str, Any] = {"rams": {"nRows": 8, "nColumns": 10}, "tcams": {"nRows": 12, "nColumns": 2},
             "map_rams": {"nRows": 8, "nUnits": 6, "maprams": []}, "meter_alus": {"nAlus": 4, "meters": []},
             "logical_tables": {"size": 16, "ids": []}, "xbar_bytes": {"size": 128, "exact_size": 128,
                                                                       "ternary_size": 66, "bytes": []},
             "action_bus_bytes": {"size": 128, "bytes": []}}
    s0 = {**stage, "stage_number": 0, "rams": {**stage["rams"], "srams": units("rules_hard")},
          "tcams": {**stage["tcams"], "tcams": units("rules_hard", "rules_hard")},
          "logical_tables": {"size": 16, "ids": [{"id": 0, "table_name": "rules_hard"}]},
          "xbar_bytes": {**stage["xbar_bytes"], "bytes": [{"byte_number": i} for i in range(6)]}}
    s1 = {**stage, "stage_number": 1, "rams": {**stage["rams"], "srams": units("centroid", "centroid", "centroid+reg_s")},
          "tcams": {**stage["tcams"], "tcams": []}, "meter_alus": {"nAlus": 4, "meters": units("reg_s")},
          "logical_tables": {"size": 16, "ids": [{"id": 0, "table_name": "centroid"}]}}
    empty = {**stage, "stage_number": 2, "rams": {**stage["rams"], "srams": []}, "tcams": {**stage["tcams"], "tcams": []}}
    return {"program_name": "chimera_tna.p4", "run_id": "x", "build_date": "now", "compiler_version": "9.13.4",
            "schema_version": version, "resources": {"mau": {"nStages": 12, "mau_stages": [s0, s1, empty]},
                                                     "parser": {}, "phv_containers": {}}}


def test_the_resource_report_reads_into_shares_of_the_whole_pipe() -> None:
    """Every share is used over the pipe's capacity, as the report states it (stages x units per stage); a unit
    two tables share counts once in the total and once for each table."""
    import json

    from chimera.targets.tofino.resources import parse
    a = parse(json.dumps(_report()))
    assert a.stages_available == 12 and a.stages_used == 2
    assert (a.sram.used, a.sram.capacity) == (4, 12 * 80) and (a.tcam.used, a.tcam.capacity) == (2, 12 * 24)
    assert (a.stateful_alu.used, a.stateful_alu.capacity) == (1, 48) and a.logical_tables.used == 2
    assert a.sram_by_table == {"rules_hard": 1, "centroid": 3, "reg_s": 1} and a.tcam_by_table == {"rules_hard": 2}
    assert a.xbar_bytes.used == 6 and abs(a.tcam.fraction - 2 / 288) < 1e-12 and a.row()["tcam_share"] == a.tcam.fraction


#: a real compile's reports (tests/fixtures/tofino/README.md): Leo's program for the tests' small tree
REAL = Path(__file__).parent / "fixtures" / "tofino"


def _real_out(tmp_path: Path) -> Path:
    """A compile's output folder holding the real reports, where the backend writes them."""
    import gzip
    logs = tmp_path / "out.tofino" / "pipe" / "logs"
    logs.mkdir(parents=True)
    (logs / "resources.json").write_bytes(gzip.decompress((REAL / "resources.json.gz").read_bytes()))
    shutil.copy(REAL / "metrics.json", logs / "metrics.json")
    return tmp_path / "out.tofino"


def test_a_real_compiles_report_reads_into_the_allocation_its_raw_sums_give(tmp_path: Path) -> None:
    """The reader on a report the pinned compiler wrote: each unit count is the raw file's sum over its stages, each
    capacity nStages x the stage's units, the PHV the metrics' occupancy over every container resources.json lists,
    the latency the metrics' cycles; the tables it names are the program's."""
    import json

    from chimera.targets.tofino import leo
    from chimera.targets.tofino.resources import p4_name, read
    out = _real_out(tmp_path)
    a = read(out)
    raw = json.loads((out / "pipe" / "logs" / "resources.json").read_text())["resources"]
    met = json.loads((out / "pipe" / "logs" / "metrics.json").read_text())
    stages = raw["mau"]["mau_stages"]
    n = raw["mau"]["nStages"]
    assert a.program == "leo_tna.p4" and a.stages_available == n == 12 and 0 < a.stages_used <= n
    assert (a.sram.used, a.sram.capacity) == (sum(len(s["rams"]["srams"]) for s in stages),
                                              n * stages[0]["rams"]["nRows"] * stages[0]["rams"]["nColumns"])
    assert (a.tcam.used, a.tcam.capacity) == (sum(len(s["tcams"]["tcams"]) for s in stages),
                                              n * stages[0]["tcams"]["nRows"] * stages[0]["tcams"]["nColumns"])
    assert a.stateful_alu.used == sum(len(s["meter_alus"]["meters"]) for s in stages) > 0
    pc = raw["phv_containers"]
    held = met["phv"]["normal"] + met["phv"]["tagalong"]
    assert a.phv_bits is not None and a.phv_containers is not None
    assert (a.phv_bits.used, a.phv_bits.capacity) == (sum(x["bits_occupied"] for x in held),
                                                      sum(c["units"] * c["width"] for k in pc for c in pc[k]))
    assert a.phv_containers.used == sum(x["containers_occupied"] for x in held) > 0
    assert a.latency_cycles == {x["gress"]: x["cycles"] for x in met["mau"]["latency"]} and \
        a.latency_cycles["ingress"] > 0
    row = a.row()
    assert all(0 < float(v) <= 1 for k, v in row.items() if k.endswith("_share"))
    assert row["ingress_latency_cycles"] == a.latency_cycles["ingress"]
    rt, _ = _tree()
    program = leo.render(rt, _artifact())
    for name in {p4_name(t) for t in [*a.sram_by_table, *a.tcam_by_table]}:
        assert re.search(rf"\b{re.escape(name)}\b", program), f"{name}: not a table or register of the program"


def test_the_real_report_is_the_format_the_pinned_compiler_writes() -> None:
    """The fixture's schemas are the majors the reader follows, and the compiler that wrote it is the p4c commit
    scripts/build-tofino-compiler pins; where the compiler is built here, it is that one (a rebuilt compiler of
    another commit needs a fixture of its own)."""
    import gzip
    import json

    from chimera.targets.tofino.compiler import DRIVER, compiler_missing, driver_version
    from chimera.targets.tofino.resources import METRICS_MAJOR, SCHEMA_MAJOR
    res = json.loads(gzip.decompress((REAL / "resources.json.gz").read_bytes()))
    met = json.loads((REAL / "metrics.json").read_text())
    assert res["schema_version"].split(".")[0] == str(SCHEMA_MAJOR)
    assert met["schema_version"].split(".")[0] == str(METRICS_MAJOR)
    assert res["compiler_version"] == met["compiler_version"]
    said = (REAL / "compiler.txt").read_text().strip()
    script = (Path(__file__).parents[1] / "scripts" / "build-tofino-compiler").read_text()
    pin = re.search(r"^p4c\s+\S+\s+(\w+)\s*$", script, re.M)
    assert pin is not None and f"SHA: {pin.group(1)}" in said
    if compiler_missing() is None:
        assert driver_version(Path(shutil.which(DRIVER) or DRIVER).resolve()) == said


@pytest.mark.parametrize(("text", "why"), [("{", "not JSON"), ('{"schema_version": "3.0.0"}', "schema 3.0.0"),
                                           ('{"schema_version": "2.4.2"}', "does not hold")])
def test_a_report_it_cannot_read_is_refused_with_the_reason(text: str, why: str) -> None:
    from chimera.errors import ResultsError
    from chimera.targets.tofino.resources import parse
    with pytest.raises(ResultsError, match=why):
        parse(text)


def _compiled(out: Path, report: dict[str, Any] | None, log: str = "") -> Any:
    """What try_compile returns for a compile under ``out``: its report written where the backend writes it."""
    import json

    from chimera.targets.tofino.compiler import Compile
    if report is not None:
        logs = out / "out.tofino" / "pipe" / "logs"
        logs.mkdir(parents=True)
        (logs / "resources.json").write_text(json.dumps(report))
    return Compile(out, report is not None, 0 if report is not None else 1, log, "p4c 1.2.5.16 (SHA: test)")


@pytest.mark.parametrize("fits", [True, False])
def test_the_report_is_the_allocation_or_the_compilers_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                fits: bool) -> None:
    """A program that fits reports its shares; one the backend refuses is a row with the compiler's own error line
    (a refusal is a result), never a crash and never a share."""
    import chimera.targets.tofino as tofino
    refusal = "chimera_tna.p4(210): error: reg_s_0_0: too many accesses to a register in one stage\nlater noise"
    monkeypatch.setattr(TofinoTarget, "unavailable_reason", classmethod(lambda cls: None))
    monkeypatch.setattr(tofino, "try_compile",
                        lambda art, build_dir: _compiled(tmp_path, _report() if fits else None, refusal))
    monkeypatch.setattr(tofino, "table_entries", lambda art: {"rules_hard": 2, "centroid": 5, "len_range": 16})
    rep = TofinoTarget().report_resources(None, tmp_path)  # type: ignore[arg-type]
    assert rep.fits is fits
    if fits:
        assert rep.reason == "" and rep.compiler == "9.13.4"
        assert rep.columns["stages_used"] == 2 and rep.columns["tcam_share"] == 2 / 288
        assert rep.columns["tcam_entries"] == 2 and rep.columns["tcam_tables"] == "rules_hard"
    else:
        assert rep.columns == {} and rep.compiler.startswith("p4c 1.2.5.16")
        assert rep.reason == "reg_s_0_0: too many accesses to a register in one stage at chimera_tna.p4(210)"


def test_a_refusal_keeps_the_critical_path_table_placement_found(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the compile got as far as table placement, its row says the stages the longest chain of dependent
    tables needs, as the real summary states it (the most of its attempts), refusal or not: the least any placement
    can take. A compile that stopped earlier has no such column."""
    import chimera.targets.tofino as tofino
    from chimera.targets.tofino.resources import critical_path
    text = (REAL / "table_summary.log").read_text()
    assert critical_path(tmp_path) is None
    (tmp_path / "pipe" / "logs").mkdir(parents=True)
    (tmp_path / "pipe" / "logs" / "table_summary.log").write_text(text)
    said = [int(n) for n in re.findall(r"Critical path length through the table dependency graph: (\d+)", text)]
    assert len(said) >= 2 and critical_path(tmp_path) == max(said) == 12
    (tmp_path / "pipe" / "logs" / "table_summary.log").write_text(text.replace("graph: 12", "graph: 11", 1))
    assert critical_path(tmp_path) == 12, "the most of the attempts"
    out = tmp_path / "compile"
    monkeypatch.setattr(TofinoTarget, "unavailable_reason", classmethod(lambda cls: None))
    monkeypatch.setattr(tofino, "try_compile", lambda art, build_dir: _compiled(out, None, "error: using 13 stages"))
    monkeypatch.setattr(tofino, "table_entries", lambda art: {})
    (out / "out.tofino" / "pipe" / "logs").mkdir(parents=True)
    (out / "out.tofino" / "pipe" / "logs" / "table_summary.log").write_text(text)
    rep = TofinoTarget().report_resources(None, tmp_path)  # type: ignore[arg-type]
    assert not rep.fits and rep.columns == {"critical_path_stages": 12}


def test_a_reports_table_names_are_the_programs() -> None:
    from chimera.targets.tofino.resources import p4_name
    assert [p4_name(n) for n in ("ChimeraIngress.len_range", "len_range$tind", "ChimeraIngress.soft_3$tind",
                                 "hard_rules")] == ["len_range", "len_range", "soft_3", "hard_rules"]


def test_one_versions_entries_per_table_are_what_p4runtime_installs() -> None:
    """The count per table, from the artifact, is the P4Runtime entries of version 0 as BMv2 takes them."""
    from collections import Counter

    from chimera.targets.bmv2.p4rt import model_entries
    from chimera.targets.tofino import table_entries
    art = _artifact()
    assert len(art.soft_rules) and len(art.global_table) and len(art.hard_rules)
    assert table_entries(art) == dict(Counter(str(e.table_id).rsplit(".", 1)[-1] for e in model_entries(art, 0)))


class _Reporter(CompileOnlyTarget):
    """A target whose compiler refuses one variant's program and fits the others (the resources kind's contract)."""

    name = "fake-compiler"
    label = title = program = "fake"
    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None

    def run(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("a compile-only target classifies nothing")

    def report_tree(self, tree: Any, art: Any, build_dir: Path) -> ResourceReport:
        raise AssertionError("the variants' compiles do not compile a tree")

    def report_resources(self, art: Any, build_dir: Path) -> ResourceReport:
        if art == "Local window only":
            return ResourceReport(False, "error: stage count exceeded", "fake 1.0", {})
        return ResourceReport(True, "", "fake 1.0", {"program": "p", "stages_used": 7, "stages_available": 12,
                                                     "sram_share": 0.25, "tcam_share": 0.125})


def test_the_resources_kind_compiles_each_switch_resident_variant(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """One row per switch-resident variant of the experiment, in order; a † variant gets none; a refusal is a row;
    the table is the schema's and the report shows the shares and the refusal."""
    from types import SimpleNamespace

    from chimera.experiments.config import Variant, resolve_variants
    from chimera.experiments.kinds.resources import render as R, run as K, tables as T
    from chimera.experiments.load import load_experiment
    cfg = load_experiment("resources")
    cfg = cfg.model_copy(update={"variants": [*cfg.variants, Variant(name="Exact softmax", group="Attention",
                                                                     model={"attention": "softmax"})]})
    variants = resolve_variants(cfg)
    monkeypatch.setattr(K, "train_variant", lambda data, rules, v, seed, cache: v.name)
    compiled: list[str] = []
    monkeypatch.setattr(K, "compile_variant", lambda data, rules, v, trained: compiled.append(v.name) or trained)
    monkeypatch.setattr(K, "save_artifact", lambda art, where, name: None)
    ctx = SimpleNamespace(variants=variants, target=_Reporter(), cfg=cfg, run=SimpleNamespace(path=tmp_path))
    nd = SimpleNamespace(data=None, rules=None, cache=None)
    df = K.compile_reports(ctx, nd, variants[0].name)  # type: ignore[arg-type]
    switch = [v.name for v in variants if not v.software_only]
    assert list(df["variant"]) == switch and "Exact softmax" not in switch and len(switch) == len(variants) - 1
    assert list(df.loc[~df["fits"], "variant"]) == ["Local window only"]
    assert compiled == switch[1:], "the first variant is the run's own artifact: compiled once, not again"
    T.COMPILES.write(df, tmp_path)
    back = T.COMPILES.read(tmp_path)
    text = "\n".join(R.compiles_section(back))
    assert "fake-compiler" in text and "stage count exceeded" in text and "7 of 12" in text and "25.0%" in text


def _tree() -> Any:
    """Leo's tree fitted on a small window of synthetic features, in the format the program takes."""
    import numpy as np

    from chimera.baselines.features import fair_inputs
    from chimera.baselines.leo import fit_leo
    from chimera.experiments.kinds.resources.run import range_tree
    rng = np.random.default_rng(3)
    spec = fair_inputs(4)
    x = rng.integers(0, 60, (600, spec.n_features))
    x[:50, : 2 * len(spec.fields)] = -1    # packets near their flow's start: lags missing
    y = (x[:, 0] > 30).astype(np.int64) + (x[:, len(spec.fields)] > 20) + 2 * (x[:, -1] > 40)
    _, tree = fit_leo(x, y, spec, 6, 1)
    return range_tree(tree), tree


def test_the_resources_kind_keeps_the_tree_leos_row_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leo's row compiles the tree the run chose, fitted again, and keeps it in the run's artifacts as the
    format's fields, from which the same tree reads back."""
    from types import SimpleNamespace

    import numpy as np

    from chimera.baselines.features import fair_inputs
    from chimera.baselines.leo import fit_leo
    from chimera.experiments.kinds.resources import run as K
    from chimera.formats.tree import RangeTree
    rng = np.random.default_rng(3)
    spec = fair_inputs(4)
    x = rng.integers(0, 60, (400, spec.n_features))
    y = (x[:, 0] > 30).astype(np.int64)
    _, tree = fit_leo(x, y, spec, 4, 1)
    seen: list[RangeTree] = []

    class Tree(_Reporter):
        def report_tree(self, tree: Any, art: Any, build_dir: Path) -> ResourceReport:
            seen.append(tree)
            return ResourceReport(False, "error: too big", "fake 1.0", {})

    monkeypatch.setattr(K, "spec_of", lambda name, st: spec)
    ctx = SimpleNamespace(target=Tree(), cfg=SimpleNamespace(seed=1), run=SimpleNamespace(path=tmp_path))
    r = SimpleNamespace(extra={"depth": 4}, pred=tree.predict(x))
    st = SimpleNamespace(tuning="full")   # Leo's search has no depth below 4: the refusal is the only row
    rows = K.leo_report(ctx, r, st, {spec: SimpleNamespace(x_tr=x, y_tr=y, x_te=x, y_va=y, x_va=x)},  # type: ignore[arg-type]
                        None)
    assert [(w["variant"], w["fits"]) for w in rows] == [("Leo", False)] and seen == [K.range_tree(tree)]
    kept = json.loads((tmp_path / "artifacts" / "leo-tree.json").read_text())
    back = RangeTree(**{k: tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v
                        for k, v in kept.items()})
    assert back == seen[0]


@pytest.mark.parametrize(("holds", "compiled", "fitting"), [
    (8, [20, 4, 16, 12, 8], [8, 4]),    # the shallowest fits: the rest from the deepest down, to the first fit
    (2, [20, 4], []),                  # the shallowest is refused: no deeper tree is tried
    (20, [20], [20]),                  # the chosen tree fits: its row is the only one
])
def test_where_leos_chosen_tree_is_refused_the_deepest_of_its_depths_that_fits_is_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, holds: int, compiled: list[int], fitting: list[int]) -> None:
    """A refused chosen tree is followed by Leo's shallower depths: the shallowest first (refused: none deeper is
    tried), then from the deepest down to the first that fits; each tree fitted on the same rows, compiled and kept,
    its row saying its depth, its validation macro-F1 and what sized it, the rows deepest first. The fake compiler
    holds a tree of at most as many leaves as the depth-``holds`` tree of these rows has."""
    from types import SimpleNamespace

    import numpy as np

    from chimera.baselines.features import fair_inputs
    from chimera.baselines.leo import fit_leo
    from chimera.experiments.kinds.resources import run as K
    from chimera.metrics.classification import macro_f1
    rng = np.random.default_rng(5)
    spec = fair_inputs(4)
    x = rng.integers(0, 1000, (3000, spec.n_features))
    y = rng.integers(0, 4, 3000)      # labels no shallow tree fits: every depth is a different tree
    leaves = {d: len(fit_leo(x, y, spec, d, 1)[1].leaf_class) for d in (2, 4, 6, 8, 12, 16, 20)}
    assert sorted(leaves.values()) == list(leaves.values()) and len(set(leaves.values())) == len(leaves)
    seen: list[Any] = []

    class Holds(_Reporter):
        def report_tree(self, tree: Any, art: Any, build_dir: Path) -> ResourceReport:
            seen.append(tree)
            ok = len(tree.leaf_class) <= leaves[holds]
            return ResourceReport(ok, "" if ok else "error: crossbar", "fake 1.0",
                                  {"program": "leo_tna.p4", "stages_used": 9, "stages_available": 12} if ok else {})

    monkeypatch.setattr(K, "spec_of", lambda name, st: spec)
    ctx = SimpleNamespace(target=Holds(), cfg=SimpleNamespace(seed=1), run=SimpleNamespace(path=tmp_path))
    _, chosen = fit_leo(x, y, spec, 20, 1)
    r = SimpleNamespace(extra={"depth": 20}, pred=chosen.predict(x))
    sf = SimpleNamespace(x_tr=x, y_tr=y, x_te=x, x_va=x[:500], y_va=y[:500])
    rows = K.leo_report(ctx, r, SimpleNamespace(tuning="full"), {spec: sf}, None)  # type: ignore[arg-type]
    assert [len(t.leaf_class) for t in seen] == [leaves[d] for d in compiled]
    assert [w["depth"] for w in rows] == sorted(compiled, reverse=True)
    assert [w["depth"] for w in rows if w["fits"]] == fitting
    assert [w["variant"] for w in rows] == ["Leo" if d == 20 else f"Leo (depth {d})" for d in sorted(compiled)[::-1]]
    assert [w["sized_by"] for w in rows] == [K.LEO_CHOSEN if d == 20 else K.LEO_FITTED for d in sorted(compiled)[::-1]]
    for w in rows:
        _, t = fit_leo(x, y, spec, int(w["depth"]), 1)
        assert w["val_f1"] == pytest.approx(macro_f1(sf.y_va, t.predict(sf.x_va)))
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == \
        sorted("leo-tree.json" if d == 20 else f"leo-tree-depth{d}.json" for d in compiled)
    # the budget's grid below the choice, then the widened search's depths below the grid's shallowest
    assert K.leo_depths(SimpleNamespace(tuning="full"), 20) == [16, 12, 8, 6, 4]   # type: ignore[arg-type]
    assert K.leo_depths(SimpleNamespace(tuning="full"), 8) == [6, 4]   # type: ignore[arg-type]
    import pandas as pd

    from chimera.experiments.kinds.resources import render as R, tables as T
    T.COMPILES.write(pd.DataFrame(rows).assign(group="Baseline", target="tofino"), tmp_path)
    text = "\n".join(R.compiles_section(T.COMPILES.read(tmp_path)))
    assert all(re.search(rf"\| {re.escape(str(w['variant']))} +\|", text) and f"{w['val_f1']:.4f}" in text
               for w in rows)


def test_leos_tree_converts_to_the_range_tree_format() -> None:
    """The format's inputs are the features the tree tests, by name; its tables are the tree's."""
    from chimera.formats.tree import RangeTree
    rt, tree = _tree()
    names = tree.spec.names()
    assert rt.inputs == tuple(names[f] for f in tree.features) and len(rt.inputs) >= 3
    assert [len(t) for t in rt.thresholds] == [len(t) for t in tree.thresholds]
    assert len(rt.leaf_class) == len(tree.leaf_class) and rt.n_classes == tree.n_classes
    assert any(RangeTree.field_lag(n)[1] > 0 for n in rt.inputs), "the fixture must read an earlier packet"


def test_leos_program_holds_its_tables_and_a_ring_of_earlier_words(tmp_path: Path) -> None:
    """Each input's thermometer code (one bit per threshold) comes from exactly one table: a range table on the
    value (for a lag: the lag's present bit, then its word's slice), sized by its thresholds (codes 0..T), or the
    exact table of its lag's narrow fields, keyed on the present bit and each narrow field's slice, sized by their
    values. The leaf table has a ternary key per code and an entry per leaf. Each word the tree needs has a ring
    of as many arrays as the deepest lag read, each put or got once per packet, and no deeper one."""
    from chimera.formats.tree import RangeTree
    from chimera.targets.tofino import leo
    rt, _ = _tree()
    art = _artifact()
    text = _preprocess(tmp_path, leo.render(rt, art), render_header(art))
    groups = leo.narrow_groups(rt)
    assert groups, "the fixture must read a narrow field at an earlier packet"
    for i, (name, th) in enumerate(zip(rt.inputs, rt.thresholds)):
        f, k = RangeTree.field_lag(name)
        assert f"bit<{len(th)}> c{i};" in text, name
        writers = re.findall(rf"\bleo\.c{i} = ", text)
        assert len(writers) == 1, name
        if k and f in leo.NARROW:
            assert i in groups[k] and f"table leo_range_{i} " not in text
            continue
        w = leo.word_of(f) if k else None
        key = leo.CURRENT[f] if not k else \
            f"leo_ne.present[{k - 1}:{k - 1}]: exact @name(\"present\"); leo.{w.name}_lag_{k}[%d:%d]" % w.slice(f)
        assert re.search(rf"table leo_range_{i} {{ key = {{ {re.escape(key)}: range @name\(\"x\"\); }} .*? "
                         rf"size = {len(th) + 1}; }}", text), name
    for k, members in groups.items():
        table = re.search(rf"table leo_narrow_{k} {{ key = {{ (.*?) }} .*? size = (\d+); }}", text)
        assert table and table.group(1).startswith(f"leo_ne.present[{k - 1}:{k - 1}]: exact"), k
        fields = {RangeTree.field_lag(rt.inputs[i])[0] for i in members}
        assert int(table.group(2)) == 1 << sum(leo.LAG_BITS[f] for f in fields) == leo.narrow_size(rt, k)
        for f in fields:
            w = leo.word_of(f)
            assert f"leo.{w.name}_lag_{k}[%d:%d]: exact" % w.slice(f) in table.group(1), (k, f)
        action = re.search(rf"action narrow_{k}_set\((.*?)\) \{{(.*?)\}}", text)
        assert action and sorted(map(int, re.findall(r"leo\.c(\d+) = ", action.group(2)))) == sorted(members)
    leaf = re.search(r"table leo_leaf \{ key = \{(.*?)\} .*? size = (\d+); \}", text)
    assert leaf and int(leaf.group(2)) == len(rt.leaf_class)
    assert re.findall(r"leo.c(\d+): ternary", leaf.group(1)) == [str(i) for i in range(len(rt.inputs))]
    deepest = max(rt.lags().values())
    for w in leo.words(rt):
        for j in range(deepest):
            assert len(re.findall(rf"\b{w.name}_{j}_put\.execute\(", text)) == 1 == \
                len(re.findall(rf"\b{w.name}_{j}_get\.execute\(", text)), (w.name, j)
        assert f"reg_{w.name}_{deepest}" not in text and f"bit<{w.width}> {w.name}_lag_{deepest};" in text
    assert "register<" not in text and "meta.label = label;" in text
    # the lags present: bit k - 1 set where the flow has k earlier packets (count >= k), for every count
    entries = {int(n): int(m, 16) for n, m in re.findall(r"(\d+) : lag_present_set\(\d+w0x([0-9A-F]+)\);", text)}
    default = int(re.search(r"default_action = lag_present_set\(\d+w0x([0-9A-F]+)\)", text).group(1), 16)
    for count in range(deepest + 3):
        mask = entries.get(count, default)
        assert [bool(mask >> (k - 1) & 1) for k in range(1, deepest + 1)] == \
            [count >= k for k in range(1, deepest + 1)], count


def test_the_lag_words_pack_each_value_at_its_own_width() -> None:
    """The words hold each lagged field at the width its values take (the baselines' FIELD_BITS; the IAT bucket
    below IAT_BUCKETS), without overlap, in the layout their writers give: the header word through the hash unit
    ({8w0, ip_len, tcp_flags}), the flow word by the IAT bucket's table (bucket << 1 | direction)."""
    from chimera.baselines.features import FIELD_BITS
    from chimera.data.tokens import IAT_BUCKETS
    from chimera.formats.tree import RangeTree
    from chimera.targets.tofino import leo
    from chimera.targets.tofino.program import iat_table
    assert leo.LAG_BITS == {f: FIELD_BITS[f] for f in leo.LAG_BITS} and IAT_BUCKETS <= 1 << leo.LAG_BITS["iat_bucket"]
    assert {f for w in leo.WORDS for f in w.fields} == set(leo.LAG_BITS) and set(leo.NARROW) < set(leo.LAG_BITS)
    for w in leo.WORDS:
        bits = [set(range(lo, hi + 1)) for hi, lo in map(w.slice, w.fields)]
        assert sum(map(len, bits)) == len(set().union(*bits)) == sum(leo.LAG_BITS[f] for f in w.fields) <= w.width
    hdr, flow = leo.word_of("ip_len"), leo.word_of("direction")
    assert hdr.slice("ip_len") == (23, 8) and hdr.slice("tcp_flags") == (7, 0)
    assert flow.slice("iat_bucket") == (4, 1) and flow.slice("direction") == (0, 0)
    t = RangeTree(("direction[t-2]", "proto"), ((0,), (5,)), ((0, 0),), ((1, 1),), (0,), 2)
    text = leo.render(t, _artifact())
    assert leo.words(t) == (flow,) and "hdr_word" not in text and "leo.flow_word = l;" in text
    for b, l in re.findall(r"iat_set\((\d+), (\d+)\);", iat_table("x", IAT_BUCKETS, "leo.flow_word")):
        assert int(l) >> 1 == int(b) and int(l) & 1 in (0, 1)
    assert leo.words(RangeTree(("proto",), ((5,),), ((0,),), ((1,),), (0,), 2)) == ()


@settings(max_examples=60, deadline=None)
@given(deepest=st.integers(1, 8), words=st.lists(st.integers(0, (1 << 32) - 1), min_size=1, max_size=40),
       start=st.integers(0, 7))
def test_the_ring_and_its_order_table_give_each_lag_the_word_of_that_many_packets_ago(
        deepest: int, words: list[int], start: int) -> None:
    """Run the generated program's ring as a Tofino would, per packet: the head's RegisterAction (returns the
    head, steps it, wrapping at the deepest lag), each array's put (at the head, read from the program's text) or
    get, then the order table's action for the head, also read from the text. Lag k is then the word of k packets
    before, wherever the head started (a slot's head carries over from the flow before)."""
    from chimera.formats.tree import RangeTree
    from chimera.targets.tofino import leo
    t = RangeTree((f"ip_len[t-{deepest}]",), ((1,),), ((0,),), ((1,),), (0,), 2)
    text = leo.render(t, _artifact())
    step = re.search(r"lag_head_step = \{.*?\{ rv = v; if \(v == (\d+)\) \{ v = 0; \} else \{ v = v \+ 1; \} \}",
                     text, re.S)
    assert step and int(step.group(1)) == deepest - 1
    puts = {int(h): int(j) for h, j, j2 in
            re.findall(r"if \(leo\.head == (\d+)\) \{ leo\.hdr_word_ring_(\d+) = hdr_word_(\d+)_put\.execute", text)
            if j == j2}
    assert sorted(puts) == list(range(deepest)) and all(puts[h] == h for h in puts)
    moved = r"leo\.hdr_word_lag_(\d+) = leo\.hdr_word_ring_(\d+);"
    order = {int(h): dict((int(k), int(j)) for k, j in re.findall(moved, moves))
             for h, moves in re.findall(r"action lag_order_(\d+)\(\) \{(.*?)\}", text)}
    entries = {int(h): int(a) for h, a in re.findall(r"(\d+) : lag_order_(\d+)\(\);", text)}
    head, ring = start % deepest, [0] * deepest
    for n, word in enumerate(words):
        h, head = head, 0 if head == deepest - 1 else head + 1
        got = list(ring)                   # each array returns what it held; the one at the head stores the word
        ring[puts[h]] = word
        lags = order[entries[h]]
        assert sorted(lags) == list(range(1, deepest + 1))
        for k in range(1, min(n, deepest) + 1):
            assert got[lags[k]] == words[n - k], (n, k)


def test_a_tree_reading_a_field_the_program_does_not_compute_is_refused() -> None:
    from chimera.formats.tree import RangeTree
    from chimera.targets.tofino import leo
    t = RangeTree(("flow_bytes",), ((10,),), ((0,),), ((1,),), (0,), 2)
    with pytest.raises(ValueError, match="flow_bytes"):
        leo.render(t, _artifact())


def test_leos_report_counts_its_range_and_leaf_entries_in_tcam(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import chimera.targets.tofino as tofino
    from chimera.targets.tofino import leo
    rt, _ = _tree()
    entries = leo.table_entries(rt)
    some = next(n for n in entries if n.startswith("leo_range_"))
    rep_json = _report()
    for st in rep_json["resources"]["mau"]["mau_stages"][:1]:
        st["tcams"]["tcams"] = [{"row": 0, "column": 0, "usages": [{"used_by": "ChimeraIngress.leo_leaf"}]},
                                {"row": 1, "column": 0, "usages": [{"used_by": f"ChimeraIngress.{some}"}]}]
    monkeypatch.setattr(TofinoTarget, "unavailable_reason", classmethod(lambda cls: None))
    monkeypatch.setattr(tofino, "compile_text", lambda text, header, build_dir, program: _compiled(tmp_path, rep_json))
    rep = TofinoTarget().report_tree(rt, _artifact(), tmp_path)
    assert rep.fits and rep.columns["tcam_tables"] == " ".join(sorted(["leo_leaf", some]))
    assert rep.columns["tcam_entries"] == len(rt.leaf_class) + entries[some]
    i = int(some.rsplit("_", 1)[1])
    assert entries[some] == len(rt.thresholds[i]) + 1


def test_the_quickstart_program_fits_or_is_refused_only_at_its_products_where_the_compiler_is(tmp_path: Path) -> None:
    """Where p4c's Tofino backend is on PATH: the quickstart's TNA program either fits one pipe (its report read into
    an allocation), or the backend refuses it at the products of two run-time values and nowhere else: the verdict
    chimera.targets.tofino.program keeps as the program's (a Tofino action has no multiplier; issue 57). Any other
    refusal is a defect of the generated program. Skipped, saying why, where the compiler is not built."""
    from chimera.experiments.load import build_artifact
    from chimera.targets.tofino.compiler import compiler_missing
    why = compiler_missing()
    if why is not None:
        pytest.skip(f"the Tofino compiler is not here: {why}")
    art = build_artifact("quickstart").art
    rep = TofinoTarget().report_resources(art, tmp_path)
    if rep.fits:
        assert 0 < int(rep.columns["stages_used"]) <= int(rep.columns["stages_available"])
        assert all(0 <= float(v) <= 1 for k, v in rep.columns.items() if k.endswith("_share"))
        return
    assert all(said.startswith("source of modify_field invalid") for said in rep.reason.splitlines()), rep.reason
    cited = [int(n) for n in re.findall(r"chimera_tna\.p4\((\d+)\)", rep.reason)]
    assert cited, rep.reason
    lines = render(art).splitlines()
    product = re.compile(r"meta\.\w+\)?\s*\*\s*\(?(?:\(\w+<\d+>\))?meta\.\w+")
    assert all(product.search(lines[n - 1]) for n in cited), [lines[n - 1].strip() for n in cited]


def test_a_compile_past_its_limit_is_a_refusal_in_those_words_and_not_cached(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's table placement can search for hours on a program far over budget: the compile stops at its
    limit, says so as the compiler's verdict, and leaves no cached result (a longer limit may finish)."""
    from chimera.targets.tofino import compiler as TC
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid = tmp_path / "backend.pid"
    for name, body in (("p4c", "#!/bin/sh\n[ \"$1\" = --version ] && echo 'p4c 1.2.5 (fake)' && exit 0\n"
                               f"sleep 600 & echo $! > {pid}\nwait\n"),
                       ("p4c-barefoot", "#!/bin/sh\nexit 0\n")):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    c = TC.compile_text("/* program */", "/* header */", tmp_path / "build", "x.p4", timeout_s=1)
    assert not c.ok and "did not finish within 1 s" in c.reason and c.version == "p4c 1.2.5 (fake)"
    assert not (c.out_dir / "compile.log").exists()
    backend = int(pid.read_text())   # the driver's child (the backend) was stopped with it, not left running
    state = Path(f"/proc/{backend}/stat")
    assert not state.exists() or state.read_text().split(") ")[1][0] in "ZX"


def test_a_backend_that_cannot_start_is_missing_not_a_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed p4c-barefoot without its shared libraries on the run path (seen here: libz3) fails before it
    reads the program; that is a missing tool, named with the fix, and no verdict on the program is cached."""
    from chimera.errors import ToolMissingError
    from chimera.targets.tofino import compiler as TC
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("p4c", "#!/bin/sh\nexit 0\n"),
                       ("p4c-barefoot", "#!/bin/sh\necho 'p4c-barefoot: error while loading shared libraries: "
                                        "libz3.so.4.11' >&2\nexit 127\n")):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    why = TC.compiler_missing()
    assert why is not None and "cannot start" in why and "libz3.so.4.11" in why and "LD_LIBRARY_PATH" in why
    with pytest.raises(ToolMissingError, match="cannot start"):
        TC.compile_text("/* program */", "/* header */", tmp_path / "build", "x.p4")
    assert not (tmp_path / "build").exists()


def test_a_refusal_names_the_program_by_its_file_not_the_build_folder(tmp_path: Path) -> None:
    from chimera.targets.tofino.compiler import Compile
    out = tmp_path / "build" / "tofino-0123"
    c = Compile(out, False, 1, f"warning: w\n{out}/leo_tna.p4(437): [--Werror=overlimit] error: : too many\n", "p4c")
    assert c.reason == "too many at leo_tna.p4(437)"


def test_a_refusal_says_each_distinct_error_once_with_how_often_and_where() -> None:
    """A program over budget repeats one error per unrolled element (73 times for the quickstart's products): the
    verdict is one line per kind of refusal, not the first twenty lines of one kind."""
    from chimera.targets.tofino.compiler import Compile
    log = "".join(f"chimera_tna.p4({n}): error: : source of modify_field invalid\n    code\n" for n in range(100, 106))
    log += ("chimera_tna.p4(7): [--Werror=unsupported] error: You can only have one operator\n"
            "error: Number of errors exceeded set maximum of 20\n"
            "0 errors, 7 warnings generated.\n"
            "out.tofino/pipe/leo_tna.bfa:3122: error: tofino supports up to 12 stages, using 24\n")
    c = Compile(Path("/b"), False, 1, log, "p4c")
    assert c.reason.splitlines() == [
        "source of modify_field invalid (x6) at chimera_tna.p4(100), chimera_tna.p4(101), chimera_tna.p4(102), "
        "chimera_tna.p4(103) and 2 more",
        "You can only have one operator at chimera_tna.p4(7)",
        "tofino supports up to 12 stages, using 24 at out.tofino/pipe/leo_tna.bfa:3122"]


def _bitlen_entries() -> list[tuple[int, int, int]]:
    from chimera.targets.tofino.program import bitlen_table
    return [(int(v, 16), int(m, 16), int(n)) for v, m, n in
            re.findall(r"32w0x([0-9A-F]+) &&& 32w0x([0-9A-F]+) : t_set\((\d+)\);",
                       bitlen_table("t").replace("32w0 &&&", "32w0x0 &&&"))]


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.integers(0, 2 ** 32 - 1), st.integers(0, 31).map(lambda k: 2 ** k),
                 st.integers(1, 32).map(lambda k: 2 ** k - 1)))
def test_the_bit_length_table_is_v1models_bit_length(x: int) -> None:
    """The IAT and packet-index buckets' table gives what BIT_LENGTH32 gives: exactly one entry matches every
    32-bit value, and its number is the value's bit length (0 for 0)."""
    entries = _bitlen_entries()
    assert len(entries) == 33
    assert [n for v, m, n in entries if x & m == v] == [x.bit_length()]


@settings(max_examples=1500, deadline=None)
@given(ne=st.integers(0, 1), pkts=st.one_of(st.just(0), st.integers(0, 0xFFFF)),
       units=st.one_of(st.integers(0, 2 ** 32 - 1), st.integers(0, 31).map(lambda k: 2 ** k),
                       st.integers(1, 32).map(lambda k: 2 ** k - 1)))
def test_the_iat_bucket_table_is_v1models_step_2(ne: int, pkts: int, units: int) -> None:
    """The first entry of the IAT bucket's table that matches (a ternary table's priority is its order) gives what
    v1model's step 2 and the reference give: 0 for a new flow (a new signature, or a count of 0), otherwise
    1 + the gap's bit length, at most IAT_BUCKETS - 1."""
    from chimera.data.tokens import IAT_BUCKETS
    from chimera.targets.tofino.program import iat_entries
    want = 0 if ne or pkts == 0 else 1 + min(units.bit_length(), IAT_BUCKETS - 2)
    got = next(b for a, am, c, cm, u, um, b in iat_entries(IAT_BUCKETS)
               if ne & am == a and pkts & cm == c and units & um == u)
    assert got == want


@settings(max_examples=1500, deadline=None)
@given(src=st.integers(0, 3), dst=st.integers(0, 3), sport=st.integers(0, 3), dport=st.integers(0, 3),
       hi=st.sampled_from([0, 1 << 31, 0xFFFF0000]))
def test_the_key_order_table_swaps_where_v1model_does(src: int, dst: int, sport: int, dport: int, hi: int) -> None:
    """The key order's ternary entries, read from the program, on the saturating differences: the key is
    reversed exactly where (src, sport) > (dst, dport), as v1model's condition and the reference say."""
    from chimera.targets.tofino.program import swap_table
    text = swap_table("l", 10)
    entries = [(*[tuple(int(x, 0) for x in re.findall(r"\d+w(0x[0-9A-F]+|\d+)", part)) for part in key.split(",")], act)
               for key, act in re.findall(r"\((\d+w.*?)\) : (\w+)\(\);", text)]
    assert len(entries) == 3
    default = re.search(r"default_action = (\w+)\(\);", text).group(1)
    src, dst = src | hi, dst | hi      # addresses differing, or not, in their high bits
    sat = lambda a, b: max(a - b, 0)   # noqa: E731  (a |-| b)
    key = (sat(src, dst), sat(dst, src), sat(sport, dport))
    act = next((e[3] for e in entries if all(k & m == v for k, (v, m) in zip(key, e[:3]))), default)
    assert (act == "key_reversed") == ((src, sport) > (dst, dport))


@pytest.mark.parametrize("which", ["chimera", "leo"])
def test_what_a_register_action_stores_is_computed_before_it(tmp_path: Path, which: str) -> None:
    """A RegisterAction writes its input when it runs, where v1model writes at the end of the packet: the clock in
    IAT units (last_swap's input) and the CRC (sig_swap's) are assigned before the actions that store them."""
    from chimera.targets.tofino import leo
    art = _artifact()
    text = _preprocess(tmp_path, render(art) if which == "chimera" else leo.render(_tree()[0], art),
                       render_header(art))
    body = text[text.index(" apply { port_map.apply();"):]
    assert "meta.tsu = tsu_hash.get(" in text   # in tsu_units' action
    for field, action in (("tsu_units.apply()", "last_swap.execute("), ("meta.crc = ", "sig_swap.execute(")):
        assert body.index(field) < body.index(action), (field, action)


def _run_register_action(body: str, v: int, env: dict[str, int]) -> tuple[int, int]:
    """A RegisterAction's body as this module's programs write them, run on the register value ``v``: statements
    ``x = e;``, at most one ``if (c) { ... } else { ... }``, and P4's ``==``, ``!=``, ``||``, ``^`` and casts."""
    def py(e: str) -> str:
        e = re.sub(r"\(bit<\d+>\)", "", e).replace("||", " or ").replace("&&", " and ")
        return re.sub(r"\bmeta\.(\w+)|\b\w+\.(ne)\b", lambda m: m.group(1) or m.group(2), e)

    def run(stmts: str, state: dict[str, int]) -> None:
        for s in filter(None, (x.strip() for x in stmts.split(";"))):
            name, expr = (x.strip() for x in s.split("=", 1))
            state[name] = int(eval(py(expr), {}, {**env, **state}))   # noqa: S307 (the test's own program text)

    state = {"v": v, "rv": 0}
    m = re.fullmatch(r"\s*if \((.*?)\) \{(.*?)\} else \{(.*?)\}\s*", body)
    if m:
        run(m.group(2) if eval(py(m.group(1)), {}, {**env, **state}) else m.group(3), state)   # noqa: S307
    else:
        run(body, state)
    return state["v"], state["rv"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 1)), min_size=1, max_size=30))
def test_the_direction_step_is_v1models_swap_xor_orientation(packets: list[tuple[bool, int]]) -> None:
    """The direction's two RegisterActions, read from the program and run packet by packet on one flow slot, as
    the apply block picks them (dir_restart on a new signature, else dir_step on the count before this packet):
    the direction is v1model's swap ^ orientation, where the orientation is the swap of the flow's first packet."""
    from chimera.targets.tofino.program import flow_registers
    action = r"RegisterAction<[^(]*>\(reg_orient\) (\w+) = \{\s*void apply\(inout bit<16> v, out bit<16> rv\) "
    bodies = dict(re.findall(action + r"\{ (.*?) \}\s*\};", "\n".join(flow_registers(Sizes.of(_artifact()))), re.S))
    assert sorted(bodies) == ["dir_restart", "dir_step"]
    v, pkts, orient = 0, 0, 0
    for new_flow, swap in packets:
        if new_flow or pkts == 0:
            orient = swap                     # v1model: the orientation is set where the flow starts
        want = swap ^ orient
        v, got = _run_register_action(bodies["dir_restart" if new_flow else "dir_step"], v,
                                      {"pkts": pkts, "swap": swap, "ne": int(new_flow)})
        assert got == want
        pkts = 1 if new_flow else pkts + 1
