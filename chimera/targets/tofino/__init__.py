"""The Tofino target: compile-only. chimera.p4 for TNA, compiled by p4c's open Tofino backend (p4c-barefoot).

Nothing here runs traffic: there is no Tofino on this project's machines, and open-p4studio's software model runs
at tens of packets per second. What the compiler gives without a switch is its verdict on the program (it fits, or
exactly why not) and its resource allocation: stages, SRAM, TCAM, crossbar and PHV (issue 57). So the target has
no testbed capability, ``--target auto`` never picks it (``auto_rank`` is None), and ``run`` refuses, naming the
targets that classify.

The program is generated (``program``): the v1model program's headers, actions and tables, verbatim, with TNA's
parsers, RegisterActions and apply block at the artifact's own sizes. The compiler comes from
``scripts/build-tofino-compiler`` (never committed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from chimera.compile.header import render as render_header
from chimera.controlplane.schedule import TraceControl
from chimera.data.pcap import PacketTable
from chimera.formats.artifact import VALUE_TABLES, Artifact
from chimera.formats.tree import RangeTree
from chimera.targets.base import Capability, CapabilityError, TargetResult
from chimera.targets.compile_only import CompileOnlyTarget, ResourceReport
from chimera.targets.tofino import leo
from chimera.targets.tofino.compiler import (INSTALL_HINT, OUTPUT, Compile, compile_tna, compile_text,
                                             compiler_missing, try_compile)
from chimera.targets.tofino.resources import critical_path, p4_name, read
from chimera.testbed.nodes import BuildOptions
from chimera.testbed.replay import ReplayConfig


def table_entries(art: Artifact) -> dict[str, int]:
    """The entries one version of ``art`` installs, per P4 table, counted from the artifact: the TNA program's
    tables are the v1model program's, so these are the P4Runtime entries BMv2 takes (tests/test_tofino.py checks
    the counts against them). The paper's Table 3 counts one version; the control plane's double buffer holds two."""
    out = {"params": 1, "len_range": len(art.len_lo), "len_fine_range": len(art.len_fine_lo),
           "flag_ternary": len(art.flag_ternary), "map_exact": len(art.map),
           "port_vocab_sport": len(art.port_vocab), "port_vocab_dport": len(art.port_vocab),
           "phi": art.c("NUM_CENTROIDS"), "phi_out": art.c("NUM_CENTROIDS"), "w_out": 1,
           "global_layer": len(art.global_table), "hard_rules": len(art.hard_rules)}
    for name, table in zip(VALUE_TABLES, art.values):
        out[f"{name}_in"] = out[f"{name}_out"] = len(table)
    for r in art.soft_rules.rule.tolist():
        out[f"soft_{int(r)}"] = out.get(f"soft_{int(r)}", 0) + 1
    return {k: v for k, v in out.items() if v}


def _report(c: Compile, entries: dict[str, int]) -> ResourceReport:
    """A compile's report: the allocation, and the entries (of ``entries``, per table) in the tables placed in
    TCAM; or the compiler's refusal."""
    cp = critical_path(c.out_dir / OUTPUT)
    path: dict[str, float | int | str] = {"critical_path_stages": cp} if cp is not None else {}
    if not c.ok:
        return ResourceReport(False, c.reason, c.version, path)
    a = read(c.out_dir / OUTPUT)
    tcam = {p4_name(t) for t in a.tcam_by_table}
    return ResourceReport(True, "", a.compiler_version,
                          {**a.row(), **path, "tcam_entries": sum(n for t, n in entries.items() if t in tcam),
                           "tcam_tables": " ".join(sorted(tcam & set(entries)))})


class TofinoTarget(CompileOnlyTarget):
    """chimera.p4 for TNA through p4c's Tofino backend: a compile and its resource report, no traffic."""

    name = "tofino"
    title = "Tofino (compile only)"
    program = "chimera.p4 for TNA"
    label = "tofino"
    capabilities = Capability.NONE   # its one measurement is the compile-only contract's report_resources
    auto_rank = None       # a compile-only target never classifies a testbed run
    tools: ClassVar[dict[str, tuple[str, ...]]] = {"p4c-barefoot": ("p4c-barefoot", "--version")}

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return compiler_missing()

    @classmethod
    def install_hint(cls) -> str:
        return INSTALL_HINT

    @classmethod
    def build_program(cls, art: Artifact, out_dir: Path, build: BuildOptions | None = None) -> Path:
        """Compile the TNA program for ``art``; the compiler's output directory (its logs and resource report)."""
        cls.require_available()
        return compile_tna(art, out_dir)

    def report_resources(self, art: Artifact, build_dir: Path) -> ResourceReport:
        """The backend's verdict on ``art``'s TNA program: its allocation where it fits, its own error lines where
        it refuses (the resources experiment records a refusal as a row, not a crash)."""
        self.require_available()
        return _report(try_compile(art, build_dir), table_entries(art))

    def report_tree(self, tree: RangeTree, art: Artifact, build_dir: Path) -> ResourceReport:
        """The backend's verdict on Leo's TNA program for ``tree`` (chimera.targets.tofino.leo)."""
        self.require_available()
        entries = leo.table_entries(tree)
        return _report(compile_text(leo.render(tree, art), render_header(art), build_dir, leo.PROGRAM), entries)

    def run(self, art: Artifact, table: PacketTable, run_dir: Path, slug: str, *, replay: ReplayConfig,
            control: TraceControl | None = None) -> TargetResult:
        raise CapabilityError("the tofino target compiles and reports resources; it classifies no traffic",
                              "classify with --target reference, ebpf or bmv2")

    def describe(self) -> dict[str, Any]:  # JSON out: the manifest's target_detail
        return {"compile_only": True}
