"""The tidy tables a resources run writes (one schema each: chimera.formats.tables.TableSchema)."""

from __future__ import annotations

from chimera.formats.tables import B, F, I, S, TableSchema

RESOURCES = TableSchema("resources.csv", {
    "method": S, "where": S, "per_flow_bits": I, "per_flow_source": S, "table_entries": I, "exact_bits": I,
    "ternary_range_bits": I, "action_data_bits": I, "model_kbits": F, "formula_bits": I, "budget_bits": I,
    "budget_ratio": F}, keys=("method", "where"), metrics=("per_flow_bits",))
CHIMERA_TABLES = TableSchema("chimera_tables.csv", {"table": S, "entries": I, "entry_bits": I, "bits": I, "match": S,
                                                    "key_bits": I, "kind": S}, keys=("table",), open_columns=True)
EBPF_MAPS = TableSchema("ebpf_maps.csv", {"name": S, "type": I, "key_size": I, "value_size": I, "max_entries": I,
                                          "per_flow": B, "bits": I}, keys=("name",), open_columns=True)
P4_REGISTERS = TableSchema("p4_registers.csv", {"name": S, "bitwidth": I, "size": I, "per_flow": B, "bits": I},
                           keys=("name",), open_columns=True)
P4_TABLES = TableSchema("p4_tables.csv", {"table": S, "size": I, "match": S}, keys=("table",), open_columns=True)
#: a compile-only target's verdict on each switch-resident variant (chimera.targets.compile_only): whether its program
#: fits, the compiler's words where not, and the allocation's columns (``<resource>_used``, ``<resource>_share``)
COMPILES = TableSchema("compiles.csv", {"variant": S, "group": S, "target": S, "fits": B, "reason": S, "compiler": S,
                                        "program": S, "stages_used": I, "stages_available": I, "sram_share": F,
                                        "tcam_share": F}, keys=("variant",), open_columns=True,
                       metrics=("stages_used", "sram_share", "tcam_share"))
