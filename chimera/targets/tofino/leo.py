"""Leo's decision tree for the Tofino Native Architecture: its range tables and leaf table, and the per-flow state
its lagged inputs need (issue 57: Table 2's Leo row, measured by the compiler).

The program shares chimera.p4's headers, parsers, flow key and clock with the pipeline's TNA program (cut from the
same regions of ``p4/chimera.p4``, so both classify the same flows with the same flow table), and its verdict
header. What is Leo's own:

- **Inputs.** Each field the tree reads is computed as the baselines define it (chimera.baselines.features): the
  token fields (IP length, IAT bucket, direction, TCP flags) and the packet's own protocol, ports, port encodings
  and index in its flow.
- **State.** A field read at lags up to L keeps L registers per flow slot, a shift chain: each packet's
  RegisterAction on lag k returns the value it held and stores lag k - 1's (lag 1 stores the packet's own). Lag k
  is present once the flow has k earlier packets. Every value goes into its range table plus 1 (missing is 0),
  as ``chimera.formats.tree`` says.
- **Tables.** One range table per input, sized by its thresholds (codes 0..T); one leaf table with a range key on
  every code, sized by the leaves. The entries are the control plane's; a compile needs only the sizes.
"""

from __future__ import annotations

from chimera.formats.artifact import Artifact
from chimera.formats.tree import RangeTree
from chimera.targets.tofino.program import (ELEMENTS, EMIT, FRONT_FIELDS, PARSE_STATES, PARSER, PRELUDE, SHIM_AND_CLOCK,
                                            TAIL, V1MODEL_SOURCE, Sizes, _ra, _reg, _tna, flow_front, flow_registers,
                                            flow_keys, ingress, parsed, region)

#: the file the compiler gets
PROGRAM = "leo_tna.p4"

#: the P4 field holding each input for the packet itself, after the shared front, and its width in bits
CURRENT: dict[str, tuple[str, int]] = {
    "ip_len": ("meta.ip_len", 16), "iat_bucket": ("meta.iat_b", 8), "direction": ("meta.dir", 8),
    "tcp_flags": ("meta.tflags", 8), "proto": ("meta.proto", 8), "sport": ("meta.sport", 16),
    "dport": ("meta.dport", 16), "lo_port": ("leo.lo_port", 16), "hi_port": ("leo.hi_port", 16),
    "responder_port": ("leo.responder_port", 16), "pkt_index": ("leo.pkt_index", 8)}


def _key_bits(field: str) -> int:
    """An input's range key width: its value plus 1 (0 is "missing") needs one bit more than the value. A field
    and its key have the same width, so the + 1 is one add within a container (a 16-bit value added into a 32-bit
    key spans two container sizes, which Tofino's PHV cannot pack; 32-bit keys for all overflow the PHV)."""
    return CURRENT[field][1] + 1


def _current(field: str) -> str:
    """The assignment of ``field``'s value for the packet itself to its lag-0 field (the 1-bit direction through a
    condition: an XOR of two 1-bit fields widened in one move is an action Tofino cannot synthesise)."""
    if field == "direction":
        return "leo.direction_0 = 0;\n            if (meta.swap != meta.orient) { leo.direction_0 = 1; }"
    if field == "ip_len":   # through the hash unit: the length is also a saturating subtraction's operand
        return "leo.ip_len_0 = ip_len_hash.get({1w0, meta.ip_len});"
    return f"leo.{field}_0 = (bit<{_key_bits(field)}>){CURRENT[field][0]};"


def _code_bits(thresholds: tuple[int, ...]) -> int:
    return max(1, len(thresholds)).bit_length()


def _meta(tree: RangeTree) -> str:
    fields = ["bit<16> lo_port;", "bit<16> hi_port;", "bit<16> responder_port;", "bit<16> pkt_index;"]
    for f, lag in tree.lags().items():
        fields += [f"bit<{_key_bits(f)}> {f}_{k};" for k in range(lag + 1)]
    fields += [f"bit<{_key_bits(RangeTree.field_lag(name)[0])}> x{i};" for i, name in enumerate(tree.inputs)]
    fields += [f"bit<{_code_bits(t)}> c{i};" for i, t in enumerate(tree.thresholds)]
    return "struct leo_meta_t {\n" + "\n".join("    " + f for f in fields) + "\n}"


def _state(tree: RangeTree, s: Sizes) -> str:
    b = s.slot_bits
    out = ["    /* flow state shared with the pipeline's program: signature, packet count, last arrival, orientation */",
           *flow_registers(s),
           "    /* the lagged inputs: per field, a shift chain of its earlier packets' values */"]
    for f, lag in tree.lags().items():
        width = CURRENT[f][1]
        for k in range(1, lag + 1):
            out += [_reg(f"reg_{f}_lag{k}", width, s.flow_slots, index=b),
                    _ra(f"reg_{f}_lag{k}", f"{f}_lag{k}_shift", width,
                        f"rv = v; v = (bit<{width}>)leo.{f}_{k - 1};", b)]
    return "\n".join(out)


def _deepest(tree: RangeTree) -> int:
    """The deepest lag the tree reads (0: only the packets' own values)."""
    return max(tree.lags().values(), default=0)


def _lag_present(deepest: int) -> list[str]:
    """Which lags the flow has, as one table on its packet count: bit k - 1 is set where it has k earlier packets
    (count >= k). The conditions ``count >= k`` read the 16-bit count once per lagged input, more PHV than the
    gateways of a stage read; a bit of this mask is one bit. None where the tree reads no earlier packet."""
    if not deepest:
        return []
    w = deepest
    entries = [f"            {n} : lag_present_set({w}w0x{(1 << n) - 1:X});" for n in range(deepest)]
    return [f"    action lag_present_set(bit<{w}> m) {{ leo_ne.present = m; }}",
            "    table lag_present {",
            "        key = { meta.pkts: exact; }",
            "        actions = { lag_present_set; }",
            f"        default_action = lag_present_set({w}w0x{(1 << deepest) - 1:X});",
            "        const entries = {", *entries, "        }",
            f"        size = {deepest};",
            "    }"]


def _tables(tree: RangeTree) -> str:
    out = [*(["    Hash<bit<17>>(HashAlgorithm_t.IDENTITY) ip_len_hash;"] if "ip_len" in tree.lags() else []),
           *_lag_present(_deepest(tree)),
           "    action nop() { }",
           "    action set_egress(bit<9> port) { ig_tm_md.ucast_egress_port = port; }",
           "    table port_map {",
           "        key = { ig_intr_md.ingress_port: exact @name(\"ingress_port\"); }",
           "        actions = { set_egress; nop; }",
           "        default_action = nop();",
           "        size = 64;",
           "    }"]
    for i, (name, th) in enumerate(zip(tree.inputs, tree.thresholds)):
        out += [f"    /* {name}: {len(th)} thresholds */",
                f"    action code_{i}(bit<{_code_bits(th)}> code) {{ leo.c{i} = code; }}",
                f"    table leo_range_{i} {{",
                f"        key = {{ leo.x{i}: range @name(\"x\"); }}",
                f"        actions = {{ code_{i}; }}",
                f"        default_action = code_{i}(0);",
                f"        size = {len(th) + 1};",
                "    }"]
    keys = " ".join(f"leo.c{i}: range @name(\"c{i}\");" for i in range(len(tree.inputs)))
    out += ["    action leaf(bit<8> label) { meta.label = label; }",
            "    table leo_leaf {",
            f"        key = {{ {keys} }}",
            "        actions = { leaf; }",
            "        default_action = leaf(0);",
            f"        size = {len(tree.leaf_class)};",
            "    }"]
    return "\n".join(out)


def _apply(tree: RangeTree, s: Sizes) -> str:
    w = ["    apply {\n" + SHIM_AND_CLOCK + """        meta.map_version = 0;
        meta.hard_hit = 0;
        meta.score = 0;
        meta.c = 0;
        meta.label = 0;
""" + flow_keys("leo_ne", s.slot_bits) + parsed("leo_ne") + """        if (meta.parsed == 1) {
""" + flow_front("leo_ne", counters=False) + """            /* Leo's inputs, as chimera.baselines.features defines them */
            leo.lo_port = meta.dport;
            leo.hi_port = meta.sport;
            if (leo_ne.port_lt != 0) { leo.lo_port = meta.sport; leo.hi_port = meta.dport; }
            /* the direction (swap ^ orient) as conditions on its two bits: a gateway does not read the XOR */
            leo.responder_port = meta.sport;
            if (meta.swap == meta.orient) { leo.responder_port = meta.dport; }
            leo.pkt_index = 255;
            if (meta.pkts[15:8] == 0) { if (meta.pkts[7:0] != 255) { leo.pkt_index = meta.pkts; } }"""]
    a = w.append
    for f, lag in tree.lags().items():
        a(f"            {_current(f)}")
        for k in range(1, lag + 1):
            a(f"            leo.{f}_{k} = (bit<{_key_bits(f)}>){f}_lag{k}_shift.execute(leo_ne.slot);")
    if _deepest(tree):
        a("            lag_present.apply();")
    for i, name in enumerate(tree.inputs):
        f, k = RangeTree.field_lag(name)
        value = f"leo.{f}_{k} + 1"
        a(f"            leo.x{i} = {value};" if k == 0 else
          f"            leo.x{i} = 0;\n            if (leo_ne.present[{k - 1}:{k - 1}] == 1) {{ leo.x{i} = {value}; }}")
    for i in range(len(tree.inputs)):
        a(f"            leo_range_{i}.apply();")
    a("            leo_leaf.apply();")
    a("        }")
    return "\n".join(w)


def render(tree: RangeTree, art: Artifact) -> str:
    """The TNA program of ``tree`` (it includes ``art``'s constants header: the flow table and clock it shares with
    the pipeline's program)."""
    unknown = sorted(f for f in tree.lags() if f not in CURRENT)
    if unknown:
        raise ValueError(f"the tree reads {unknown}, which the Leo program does not compute "
                         f"(it computes {sorted(CURRENT)})")
    s = Sizes.of(art)
    v1 = V1MODEL_SOURCE.read_text()
    control = ingress("    leo_meta_t leo;\n    leo_flag_t leo_ne;\n",
                      f"{_state(tree, s)}\n\n{_tables(tree)}\n{_apply(tree, s)}\n{_tna(region(v1, EMIT))}\n",
                      "leo_ne")
    head = (f"/* Generated by chimera.targets.tofino.leo: Leo's tree ({len(tree.inputs)} inputs, "
            f"{len(tree.leaf_class)} leaves) with the flow table of the artifact {art.sha256[:16]}: do not edit. */\n"
            "#include <core.p4>\n#include <tna.p4>\n\n")
    return "\n".join([head, region(v1, PRELUDE), PARSER + region(v1, PARSE_STATES), _meta(tree),
                      "struct leo_flag_t {\n" + "".join(f"    {f}\n" for f in (*FRONT_FIELDS, f"bit<{s.slot_bits}> slot;",
                                                                  f"bit<{max(1, _deepest(tree))}> present;")) + "}", region(v1, ELEMENTS), control, TAIL])
