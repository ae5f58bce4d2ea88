"""The control-plane contract of p4/chimera.p4: tables, actions, registers, ids, widths.

chimera.p4 pins every id with @id and every key name with @name, so this
module, the P4 source and the committed P4Info (p4/chimera.p4info.txtpb) can
agree by construction. ``render_p4info`` writes the P4Info from this schema;
tests check it against the P4 source (after the C preprocessor), and where
p4c exists ``invoke p4info --check`` diffs it against p4c's own output.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import text_format

from chimera import paths
from chimera.formats.coverage import N_POINTS

P4_DIR = paths.P4
P4_SOURCE = P4_DIR / "chimera.p4"
REDIRECT_SOURCE = P4_DIR / "redirect.p4"  # the † path: h1 -> sc -> h2, no tables (Bmv2Target.run_software)
P4INFO = P4_DIR / "chimera.p4info.txtpb"

MAX_CLASSES = 16
MAX_WINDOW = 16
MAX_SOFT = 16
MAX_CENTROIDS = 64
MAX_FLOW_SLOTS = 65536
MAX_FEATURES = 16
MAX_DV = 16
MAX_LEN_FINE = 256
MAX_SAMPLE_SLOTS = 65536
CONTROL = "ChimeraIngress"


@dataclass(frozen=True)
class Param:
    name: str
    bitwidth: int


@dataclass(frozen=True)
class Action:
    name: str
    id: int
    params: tuple[Param, ...] = ()


@dataclass(frozen=True)
class Key:
    name: str
    bitwidth: int
    match: str  # EXACT | TERNARY | RANGE


@dataclass(frozen=True)
class Table:
    name: str
    id: int
    keys: tuple[Key, ...]
    actions: tuple[str, ...]
    size: int


@dataclass(frozen=True)
class Register:
    name: str
    id: int
    bitwidth: int
    size: int


ACTIONS = (
    Action("nop", 0x01000001),
    Action("set_egress", 0x01000002, (Param("port", 9),)),
    Action("set_params", 0x01000003, (Param("alpha", 32), Param("beta", 32), Param("gamma", 32), Param("lambda_h", 1),
                                      Param("map_version", 16), Param("use_window", 1))),
    Action("set_len_bin", 0x01000004, (Param("bin", 8),)),
    Action("set_flag_class", 0x01000005, (Param("cls", 8),)),
    Action("set_centroid", 0x01000006, (Param("centroid", 8),)),
    Action("glob_add", 0x01000008, (Param("gz", 64), Param("g", 1024))),
    Action("hard_hit", 0x01000009, (Param("rule", 8), Param("label", 8))),
    Action("soft_add", 0x0100000A, (Param("w", 512),)),
    Action("set_active", 0x0100000B, (Param("ver", 1),)),
    Action("set_fine_bin", 0x0100000C, (Param("bin", 8),)),
    Action("set_port_id", 0x0100000D, (Param("id", 8),)),
    Action("val_in", 0x0100000E, (Param("v", 512),)),
    Action("val_out", 0x0100000F, (Param("v", 512),)),
    Action("set_phi", 0x01000010, (Param("q", 512), Param("k", 512))),
    Action("set_phi_out", 0x01000011, (Param("k", 512),)),
    Action("set_wout", 0x01000012, tuple(Param(f"w{e}", 512) for e in range(MAX_DV))),
    Action("set_dport_id", 0x01000013, (Param("id", 8),)),
)
ACTION_BY_NAME = {a.name: a for a in ACTIONS}

VER = Key("ver", 1, "EXACT")
RULE_KEYS = (VER, Key("proto", 8, "TERNARY"), Key("tcp_flags", 8, "TERNARY"), Key("dir", 8, "TERNARY"),
             Key("flow_pkts", 8, "TERNARY"), Key("sport", 16, "TERNARY"), Key("dport", 16, "TERNARY"),
             Key("ip_len", 16, "TERNARY"))
#: value tables: (name, id width, size); each exists as <name>_in and <name>_out
VALUE_TABLES = (("val_len", 16, 1024), ("val_iat", 8, 64), ("val_flags", 8, 64), ("val_port", 8, 256),
                ("val_index", 8, 32))

TABLES = (
    Table("active_version", 0x02000008, (), ("set_active",), 1),
    Table("port_map", 0x02000001, (Key("ingress_port", 9, "EXACT"),), ("set_egress", "nop"), 64),
    Table("params", 0x02000002, (VER,), ("set_params", "nop"), 2),
    Table("len_range", 0x02000003, (VER, Key("ip_len", 16, "RANGE")), ("set_len_bin", "nop"), 64),
    Table("len_fine_range", 0x02000009, (VER, Key("ip_len", 16, "RANGE")), ("set_fine_bin", "nop"), 512),
    Table("flag_ternary", 0x02000004, (VER, Key("tcp_flags", 8, "TERNARY")), ("set_flag_class", "nop"), 32),
    Table("map_exact", 0x02000005, (VER, Key("map_key", 16, "EXACT")), ("set_centroid", "nop"), 32768),
    Table("port_vocab_sport", 0x0200000A, (VER, Key("port", 16, "EXACT")), ("set_port_id", "nop"), 128),
    Table("port_vocab_dport", 0x0200000E, (VER, Key("port", 16, "EXACT")), ("set_dport_id", "nop"), 128),
    *(Table(f"{n}_{io}", 0x02030000 + 0x100 * k + i, (VER, Key("id", w, "EXACT")), (f"val_{io}", "nop"), size)
      for i, (n, w, size) in enumerate(VALUE_TABLES) for k, io in enumerate(("in", "out"))),
    Table("phi", 0x0200000B, (VER, Key("centroid", 8, "EXACT")), ("set_phi", "nop"), 128),
    Table("phi_out", 0x0200000C, (VER, Key("centroid", 8, "EXACT")), ("set_phi_out", "nop"), 128),
    Table("w_out", 0x0200000D, (VER,), ("set_wout", "nop"), 2),
    Table("global_layer", 0x02000006, (VER, Key("centroid", 8, "TERNARY"), Key("proto_class", 8, "TERNARY")),
          ("glob_add", "nop"), 512),
    Table("hard_rules", 0x02000007, RULE_KEYS, ("hard_hit", "nop"), 512),
    *(Table(f"soft_{i}", 0x02020000 + i, RULE_KEYS, ("soft_add", "nop"), 256) for i in range(MAX_SOFT)),
)
TABLE_BY_NAME = {t.name: t for t in TABLES}

REGISTERS = (
    Register("reg_sig", 0x16000002, 32, MAX_FLOW_SLOTS),
    Register("reg_last", 0x16000003, 32, MAX_FLOW_SLOTS),
    Register("reg_pkts", 0x16000004, 16, MAX_FLOW_SLOTS),
    Register("reg_orient", 0x16000005, 1, MAX_FLOW_SLOTS),
    Register("reg_head", 0x16000006, 8, MAX_FLOW_SLOTS),
    Register("reg_ring", 0x16000007, 64, MAX_FLOW_SLOTS * MAX_WINDOW),
    Register("reg_ema", 0x16000008, 63, MAX_CENTROIDS),  # 63-bit two's complement (see chimera.p4)
    Register("reg_counters", 0x16000009, 64, 8),
    Register("reg_s", 0x1600000A, 512, MAX_FLOW_SLOTS * MAX_FEATURES),
    Register("reg_z", 0x1600000B, 512, MAX_FLOW_SLOTS),
    Register("reg_class_ema", 0x1600000C, 63, MAX_CLASSES),
    Register("reg_sample", 0x1600000D, 32, MAX_SAMPLE_SLOTS),
    Register("reg_clock", 0x1600000E, 64, 1),
    Register("reg_cov", 0x1600000F, 64, N_POINTS),
)
REGISTER_BY_NAME = {r.name: r for r in REGISTERS}
#: the counters register's slots
COUNTER_SLOTS = ("evictions", "new_flows", "parsed", "unparsed", "samples")


def qualified(name: str) -> str:
    """P4Info name of a control-local object, as p4c writes it."""
    return f"{CONTROL}.{name}"


def render_p4info() -> str:
    """The P4Info (text format) of chimera.p4, from this schema."""
    from finsy.proto import p4i
    info = p4i.P4Info()
    info.pkg_info.arch = "v1model"
    for t in TABLES:
        pt = info.tables.add()
        pt.preamble.id, pt.preamble.name, pt.preamble.alias = t.id, qualified(t.name), t.name
        for i, k in enumerate(t.keys, 1):
            mf = pt.match_fields.add()
            mf.id, mf.name, mf.bitwidth = i, k.name, k.bitwidth
            mf.match_type = getattr(p4i.MatchField.MatchType, k.match)
        for a in t.actions:
            ref = pt.action_refs.add()
            ref.id = ACTION_BY_NAME[a].id
        pt.const_default_action_id = 0
        pt.size = t.size
    for act in ACTIONS:
        pa = info.actions.add()
        pa.preamble.id, pa.preamble.name, pa.preamble.alias = act.id, qualified(act.name), act.name
        for i, p in enumerate(act.params, 1):
            pp = pa.params.add()
            pp.id, pp.name, pp.bitwidth = i, p.name, p.bitwidth
    for r in REGISTERS:
        pr = info.registers.add()
        pr.preamble.id, pr.preamble.name, pr.preamble.alias = r.id, qualified(r.name), r.name
        pr.type_spec.bitstring.bit.bitwidth = r.bitwidth
        pr.size = r.size
    return "# P4Info of p4/chimera.p4, rendered from chimera/targets/bmv2/schema.py (ids pinned by @id).\n" + \
        text_format.MessageToString(info)
