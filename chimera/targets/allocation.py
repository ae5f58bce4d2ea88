"""What a compiled Chimera artifact actually allocates on each dataplane (the resources table, Table 2).

- eBPF: the map declarations of the object built for the artifact, read by libbpf
  from the ELF (value size x max entries per map). Per-flow state = the value
  size of every map with one entry per flow slot.
- P4 (BMv2): the register arrays and tables of p4c's BMv2 JSON where p4c is
  installed; otherwise the P4 schema (chimera.targets.bmv2.schema), which a test
  holds equal to p4c's output where p4c exists. chimera.p4 is compiled at fixed
  maxima (16-packet ring, 16 x 16 S accumulator), so its per-flow allocation does
  not shrink with a smaller model: that is the price of one P4 program for every
  configuration, and the table says so.

Match kinds: exact tables count as SRAM, ternary/range/LPM as TCAM-like.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, TypedDict

from chimera.formats.artifact import Artifact
from chimera.targets.bmv2.schema import MAX_FLOW_SLOTS, REGISTERS, TABLES


class EbpfAllocation(TypedDict):
    """What the eBPF object allocates: every map (libbpf's declarations) and the per-flow share."""
    source: str
    maps: list[dict[str, int | str]]   # libbpf.map_specs: name, type, key/value size, max entries
    per_flow_maps: list[str]
    per_flow_bits: int
    total_bits: int


class P4Register(TypedDict):
    """One register array of chimera.p4."""
    name: str
    bitwidth: int
    size: int


class P4Allocation(TypedDict):
    """What chimera.p4 allocates in registers, and the per-flow share."""
    source: str
    registers: list[P4Register]
    per_flow_registers: list[str]
    per_flow_bits: int
    total_register_bits: int


class P4Table(TypedDict):
    """One table of chimera.p4: capacity, key bits by match kind, action data bits."""
    table: str
    entries: int
    exact_key_bits: int
    tcam_key_bits: int
    action_data_bits: int
    kind: str


def ebpf_allocation(art: Artifact, build_dir: Path) -> EbpfAllocation:
    from chimera.targets.ebpf.build import build_object
    from chimera.targets.ebpf.libbpf import map_specs
    maps = map_specs(build_object(art, build_dir))
    slots = art.c("FLOW_SLOTS")
    per_flow = [m for m in maps if m["max_entries"] == slots and m["name"] != "sample"]
    return {"source": "eBPF object (libbpf map declarations)", "maps": maps,
            "per_flow_maps": [str(m["name"]) for m in per_flow],
            "per_flow_bits": int(sum(8 * int(m["value_size"]) for m in per_flow)),
            "total_bits": int(sum(8 * int(m["value_size"]) * int(m["max_entries"]) for m in maps))}


def _p4c_json(art: Artifact, build_dir: Path) -> dict[str, Any] | None:  # JSON in: p4c's BMv2 JSON
    if shutil.which("p4c-bm2-ss") is None:
        return None
    from chimera.targets.bmv2.compiler import compile_p4
    return json.loads(compile_p4(art, build_dir).read_text())


def p4_registers(art: Artifact, build_dir: Path) -> tuple[str, list[P4Register]]:
    """(source, [{name, bitwidth, size}]) of chimera.p4's register arrays."""
    js = _p4c_json(art, build_dir)
    if js is not None:
        return "p4c-bm2-ss BMv2 JSON", [P4Register(name=r["name"].split(".")[-1], bitwidth=int(r["bitwidth"]),
                                                   size=int(r["size"])) for r in js["register_arrays"]]
    return "P4 schema (p4c not installed)", [P4Register(name=r.name, bitwidth=r.bitwidth, size=r.size) for r in REGISTERS]


def p4_allocation(art: Artifact, build_dir: Path) -> P4Allocation:
    source, regs = p4_registers(art, build_dir)
    per_flow = [r for r in regs if r["size"] >= MAX_FLOW_SLOTS and r["size"] % MAX_FLOW_SLOTS == 0
                and r["name"] != "reg_sample"]  # the token sample buffer is global, not per flow
    return {"source": source, "registers": regs, "per_flow_registers": [r["name"] for r in per_flow],
            "per_flow_bits": int(sum(r["bitwidth"] * r["size"] // MAX_FLOW_SLOTS for r in per_flow)),
            "total_register_bits": int(sum(r["bitwidth"] * r["size"] for r in regs))}


def p4_tables() -> list[P4Table]:
    """chimera.p4's tables: capacity, key bits by match kind, action data bits (from the schema)."""
    from chimera.targets.bmv2.schema import ACTION_BY_NAME
    rows: list[P4Table] = []
    for t in TABLES:
        exact = sum(k.bitwidth for k in t.keys if k.match == "EXACT")
        tcam = sum(k.bitwidth for k in t.keys if k.match != "EXACT")
        adata = max((sum(p.bitwidth for p in ACTION_BY_NAME[a].params) for a in t.actions if a in ACTION_BY_NAME),
                    default=0)
        rows.append(P4Table(table=t.name, entries=t.size, exact_key_bits=exact, tcam_key_bits=tcam,
                            action_data_bits=adata, kind="TCAM-like" if tcam else "SRAM"))
    return rows
