"""Leo's decision tree for the Tofino Native Architecture: its code tables and leaf table, and the per-flow state
its lagged inputs need (issue 57: Table 2's Leo row, measured by the compiler).

The program shares chimera.p4's headers, parsers, flow key and clock with the pipeline's TNA program (cut from the
same regions of ``p4/chimera.p4``, so both classify the same flows with the same flow table), and its verdict
header. What is Leo's own:

- **Inputs.** Each field the tree reads is computed as the baselines define it (chimera.baselines.features): the
  token fields (IP length, IAT bucket, direction, TCP flags) and the packet's own protocol, ports, port encodings
  and index in its flow.
- **State.** The fields the tree reads at earlier packets are kept per packet in two words (``WORDS``): the IP
  length and TCP flags, which the parser gives, and the IAT bucket and direction, which the flow state gives, so
  each word is stored as soon as it exists. A tree reading lags up to L keeps a ring of the last L of each word
  per flow slot (L register arrays each) and one head. Each packet stores its words in the arrays at the head and
  reads the others, all in one stage (a shift chain would cost a stage per lag: each register would read the one
  before it); one exact table on the head then moves each array to the lag it holds (were each array's access a
  table on the head writing the lag itself, every such table would write every lag, and the compiler would chain
  them a stage apart). Lag k is present once the flow has k earlier packets.
- **Codes.** Each input's code is a thermometer (``_code_bits``), so a leaf's box is one ternary entry. A wide
  field's input (a length, a port) gets its code from a range table on its value; the narrow fields an earlier
  packet's word holds (TCP flags, IAT bucket, direction) get theirs from one exact table per lag on all of them
  at once (``NARROW``): a range table is a TCAM lookup with its own result bus, of which a stage has eight, and
  one per lagged input would spread the lags over four stages. A lag the flow does not have yet is missing, -1 in
  ``chimera.formats.tree``, below every threshold: its tables' keys hold the lag's present bit, their entries
  are all for present lags, and the miss gives code 0. The entries are the control plane's, over the values as
  they are; a compile needs only the sizes.
- **Leaf.** One ternary table on every code, one entry per leaf.
"""

from __future__ import annotations

from dataclasses import dataclass

from chimera.formats.artifact import Artifact
from chimera.formats.tree import RangeTree
from chimera.targets.tofino.program import (ELEMENTS, EMIT, FRONT_FIELDS, PARSER, PRELUDE, SHIM_AND_CLOCK,
                                            TAIL, V1MODEL_SOURCE, Sizes, _ra, _reg, _tna, flow_front, flow_registers,
                                            flow_keys, ingress, parse_states, parsed, region)

#: the file the compiler gets
PROGRAM = "leo_tna.p4"

#: the P4 field holding each input for the packet itself, after the shared front
CURRENT: dict[str, str] = {
    "ip_len": "meta.ip_len", "iat_bucket": "meta.iat_b", "direction": "meta.dir", "tcp_flags": "meta.tflags",
    "proto": "meta.proto", "sport": "meta.sport", "dport": "meta.dport", "lo_port": "leo.lo_port",
    "hi_port": "leo.hi_port", "responder_port": "leo.responder_port", "pkt_index": "leo.pkt_index"}

#: the bits each field an earlier packet's word holds takes: the values' own widths
#: (``chimera.baselines.features.FIELD_BITS``; the IAT bucket is below IAT_BUCKETS, 16; tests check both)
LAG_BITS: dict[str, int] = {"ip_len": 16, "tcp_flags": 8, "iat_bucket": 4, "direction": 1}

#: the lagged fields whose codes one exact table per lag gives (their values together are 13 bits)
NARROW = ("tcp_flags", "iat_bucket", "direction")


@dataclass(frozen=True)
class Word:
    """One of an earlier packet's words: its fields, from the top bit, and where it comes from."""

    name: str                     # its fields in the program: leo.<name>, leo.<name>_ring_<j>, leo.<name>_lag_<k>
    fields: tuple[str, ...]
    width: int                    # the register word's width

    def slice(self, field: str) -> tuple[int, int]:
        """``field``'s bits in the word, (high, low)."""
        low = sum(LAG_BITS[f] for f in self.fields)
        for f in self.fields:
            low -= LAG_BITS[f]
            if f == field:
                return low + LAG_BITS[f] - 1, low
        raise KeyError(field)


#: the two words, in the order they exist: the parser's fields, packed by the hash unit; the IAT bucket and
#: direction, written by the IAT bucket's table as ``bucket << 1 | direction`` (``program.iat_table``)
WORDS = (Word("hdr_word", ("ip_len", "tcp_flags"), 32), Word("flow_word", ("iat_bucket", "direction"), 8))


def _lagged(tree: RangeTree) -> set[str]:
    """The fields ``tree`` reads at earlier packets."""
    lagged = {f for f, k in map(RangeTree.field_lag, tree.inputs) if k}
    unknown = sorted(lagged - set(LAG_BITS))
    if unknown:
        raise ValueError(f"the tree reads {unknown} at earlier packets; the Leo program keeps {sorted(LAG_BITS)}")
    return lagged


def words(tree: RangeTree) -> tuple[Word, ...]:
    """The words ``tree`` needs kept (none where it reads no earlier packet)."""
    lagged = _lagged(tree)
    return tuple(w for w in WORDS if lagged & set(w.fields))


def word_of(field: str) -> Word:
    return next(w for w in WORDS if field in w.fields)


def _code_bits(thresholds: tuple[int, ...]) -> int:
    """An input's code is a thermometer: bit j is set where the value is above threshold j, so the code of the
    n-th interval is n ones. A leaf's interval of codes [lo, hi] is then one ternary pattern, bit lo - 1 set and
    bit hi clear: one leaf entry per leaf. (A binary code needs a range key, which Tofino matches in TCAM by
    nibbles and which, for a tree of many inputs, overflows a stage's input crossbar; or a prefix expansion per
    interval, whose product over a leaf's inputs runs to millions of entries.)"""
    return max(1, len(thresholds))


def _deepest(tree: RangeTree) -> int:
    """The deepest lag the tree reads (0: only the packets' own values)."""
    return max(tree.lags().values(), default=0)


def ring_position(head: int, lag: int, deepest: int) -> int:
    """The array of the ring that holds lag ``lag`` (1..deepest) where the head (the array this packet writes) is
    ``head``: the word of ``lag`` packets ago went into the array the head was at then. Lag ``deepest`` is the
    array being written, whose RegisterAction returns what it held."""
    return (head - lag) % deepest


def narrow_groups(tree: RangeTree) -> dict[int, list[int]]:
    """Per lag, the inputs at that lag of the narrow fields: their codes come from one exact table."""
    out: dict[int, list[int]] = {}
    for i, name in enumerate(tree.inputs):
        f, k = RangeTree.field_lag(name)
        if k and f in NARROW:
            out.setdefault(k, []).append(i)
    return out


def _narrow_key(tree: RangeTree, k: int) -> list[tuple[str, int]]:
    """The lag ``k`` narrow table's value keys, (field slice, bits), one per narrow field read at that lag (the
    key's name is the field's)."""
    fields = sorted({RangeTree.field_lag(tree.inputs[i])[0] for i in narrow_groups(tree)[k]}, key=NARROW.index)
    out = []
    for f in fields:
        w = word_of(f)
        hi, lo = w.slice(f)
        out.append((f"leo.{w.name}_lag_{k}[{hi}:{lo}]", hi - lo + 1))
    return out


def narrow_size(tree: RangeTree, k: int) -> int:
    """The lag ``k`` narrow table's entries: every value of its fields (the miss is the lag missing)."""
    return 1 << sum(b for _, b in _narrow_key(tree, k))


def table_entries(tree: RangeTree) -> dict[str, int]:
    """The entries the control plane installs in each of the program's tables for ``tree``: a range table's codes,
    a narrow table's values, a leaf table's leaves."""
    in_group = {i for g in narrow_groups(tree).values() for i in g}
    out = {f"leo_range_{i}": len(t) + 1 for i, t in enumerate(tree.thresholds) if i not in in_group}
    out.update({f"leo_narrow_{k}": narrow_size(tree, k) for k in narrow_groups(tree)})
    out["leo_leaf"] = len(tree.leaf_class)
    return out


def _meta(tree: RangeTree) -> str:
    fields = ["bit<16> lo_port;", "bit<16> hi_port;", "bit<16> responder_port;", "bit<16> pkt_index;"]
    deepest = _deepest(tree)
    if deepest:
        fields.append("bit<8> head;")
    for w in words(tree):
        fields += [f"bit<{w.width}> {w.name};"]
        fields += [f"bit<{w.width}> {w.name}_ring_{j};" for j in range(deepest)]
        fields += [f"bit<{w.width}> {w.name}_lag_{k};" for k in range(1, deepest + 1)]
    fields += [f"bit<{_code_bits(t)}> c{i};" for i, t in enumerate(tree.thresholds)]
    return "struct leo_meta_t {\n" + "\n".join("    " + f for f in fields) + "\n}"


def _state(tree: RangeTree, s: Sizes) -> str:
    b = s.slot_bits
    out = ["    /* flow state shared with the pipeline's program: signature, packet count, last arrival, orientation */",
           *flow_registers(s)]
    deepest = _deepest(tree)
    if not deepest:
        return "\n".join(out)
    out += [f"    /* the earlier packets' words: a ring of {deepest} per word and flow slot, and its head */",
            _reg("reg_lag_head", 8, s.flow_slots, index=b),
            _ra("reg_lag_head", "lag_head_step", 8,
                f"rv = v; if (v == {deepest - 1}) {{ v = 0; }} else {{ v = v + 1; }}", b)]
    for w in words(tree):
        for j in range(deepest):
            reg = f"reg_{w.name}_{j}"
            out += [_reg(reg, w.width, s.flow_slots, index=b),
                    _ra(reg, f"{w.name}_{j}_put", w.width, f"rv = v; v = leo.{w.name};", b),
                    _ra(reg, f"{w.name}_{j}_get", w.width, "rv = v;", b)]
    return "\n".join(out)


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


def _lag_order(tree: RangeTree) -> list[str]:
    """Which array of each ring holds which lag, by the head: one action per head, moving every array to its
    lag (``ring_position``). Its entries are constant, part of the program."""
    deepest = _deepest(tree)
    out = []
    for h in range(deepest):
        moves = " ".join(f"leo.{w.name}_lag_{k} = leo.{w.name}_ring_{ring_position(h, k, deepest)};"
                         for w in words(tree) for k in range(1, deepest + 1))
        out.append(f"    action lag_order_{h}() {{ {moves} }}")
    return [*out, "    table lag_order {",
            "        key = { leo.head: exact; }",
            "        actions = { " + " ".join(f"lag_order_{h};" for h in range(deepest)) + " }",
            "        const entries = {", *(f"            {h} : lag_order_{h}();" for h in range(deepest)),
            "        }",
            f"        size = {deepest};",
            "    }"]


def _present(k: int) -> str:
    return f"leo_ne.present[{k - 1}:{k - 1}]"


def range_key(tree: RangeTree, i: int) -> str:
    """The key of input ``i``'s range table: its value (for a lag, the word's slice, after the lag's present
    bit)."""
    f, k = RangeTree.field_lag(tree.inputs[i])
    if not k:
        return f"{CURRENT[f]}: range @name(\"x\");"
    w = word_of(f)
    hi, lo = w.slice(f)
    return f"{_present(k)}: exact @name(\"present\"); leo.{w.name}_lag_{k}[{hi}:{lo}]: range @name(\"x\");"


def _tables(tree: RangeTree) -> str:
    ws, deepest = words(tree), _deepest(tree)
    out: list[str] = []
    if any(w.name == "hdr_word" for w in ws):
        hdr = word_of("ip_len")
        parts = ", ".join(CURRENT[f] for f in hdr.fields)
        out += [f"    Hash<bit<{hdr.width}>>(HashAlgorithm_t.IDENTITY) hdr_word_hash;",
                f"    action hdr_word_set() {{ leo.hdr_word = hdr_word_hash.get({{8w0, {parts}}}); }}",
                "    table hdr_word_pack { actions = { hdr_word_set; } default_action = hdr_word_set(); size = 1; }"]
    if deepest:
        out += [*_lag_order(tree), *_lag_present(deepest)]
    out += ["    action nop() { }",
            "    action set_egress(bit<9> port) { ig_tm_md.ucast_egress_port = port; }",
            "    table port_map {",
            "        key = { ig_intr_md.ingress_port: exact @name(\"ingress_port\"); }",
            "        actions = { set_egress; nop; }",
            "        default_action = nop();",
            "        size = 64;",
            "    }"]
    groups = narrow_groups(tree)
    in_group = {i for g in groups.values() for i in g}
    for i, (name, th) in enumerate(zip(tree.inputs, tree.thresholds)):
        if i in in_group:
            continue
        out += [f"    /* {name}: {len(th)} thresholds */",
                f"    action code_{i}(bit<{_code_bits(th)}> code) {{ leo.c{i} = code; }}",
                f"    table leo_range_{i} {{",
                f"        key = {{ {range_key(tree, i)} }}",
                f"        actions = {{ code_{i}; }}",
                f"        default_action = code_{i}(0);",
                f"        size = {len(th) + 1};",
                "    }"]
    for k, members in sorted(groups.items()):
        params = ", ".join(f"bit<{_code_bits(tree.thresholds[i])}> c{i}" for i in members)
        sets = " ".join(f"leo.c{i} = c{i};" for i in members)
        names = sorted({RangeTree.field_lag(tree.inputs[i])[0] for i in members}, key=NARROW.index)
        keys = " ".join(f"{key}: exact @name(\"{f}\");" for f, (key, _) in zip(names, _narrow_key(tree, k)))
        zeros = ", ".join("0" for _ in members)
        out += [f"    /* the narrow fields at lag {k}: {', '.join(tree.inputs[i] for i in members)} */",
                f"    action narrow_{k}_set({params}) {{ {sets} }}",
                f"    table leo_narrow_{k} {{",
                f"        key = {{ {_present(k)}: exact @name(\"present\"); {keys} }}",
                f"        actions = {{ narrow_{k}_set; }}",
                f"        default_action = narrow_{k}_set({zeros});",
                f"        size = {narrow_size(tree, k)};",
                "    }"]
    keys = " ".join(f"leo.c{i}: ternary @name(\"c{i}\");" for i in range(len(tree.inputs)))
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
""" + flow_keys("leo_ne") + parsed("leo_ne") + """        if (meta.parsed == 1) {
""" + flow_front("leo_ne", counters=False) + """            /* Leo's inputs, as chimera.baselines.features defines them */
            leo.lo_port = meta.dport;
            leo.hi_port = meta.sport;
            if (leo_ne.port_lt != 0) { leo.lo_port = meta.sport; leo.hi_port = meta.dport; }
            leo.responder_port = meta.sport;
            if (meta.dir == 0) { leo.responder_port = meta.dport; }
            leo.pkt_index = 255;
            if (meta.pkts[15:8] == 0) { if (meta.pkts[7:0] != 255) { leo.pkt_index = meta.pkts; } }"""]
    a = w.append
    deepest = _deepest(tree)
    if deepest:
        a("            /* the earlier packets: each word goes into its ring at the head, the other arrays are read */")
        a("            leo.head = lag_head_step.execute(leo_ne.slot);")
        if any(x.name == "hdr_word" for x in words(tree)):
            a("            hdr_word_pack.apply();")
        for x in words(tree):
            for j in range(deepest):
                ring = f"leo.{x.name}_ring_{j}"
                a(f"            if (leo.head == {j}) {{ {ring} = {x.name}_{j}_put.execute(leo_ne.slot); }}\n"
                  f"            else {{ {ring} = {x.name}_{j}_get.execute(leo_ne.slot); }}")
        a("            lag_order.apply();")
        a("            lag_present.apply();")
    groups = narrow_groups(tree)
    in_group = {i for g in groups.values() for i in g}
    for i in range(len(tree.inputs)):
        if i not in in_group:
            a(f"            leo_range_{i}.apply();")
    for k in sorted(groups):
        a(f"            leo_narrow_{k}.apply();")
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
    late = "leo.flow_word" if any(x.name == "flow_word" for x in words(tree)) else None
    control = ingress("    leo_meta_t leo;\n    leo_flag_t leo_ne;\n",
                      f"{_state(tree, s)}\n\n{_tables(tree)}\n{_apply(tree, s)}\n{_tna(region(v1, EMIT))}\n",
                      "leo_ne", s, late)
    head = (f"/* Generated by chimera.targets.tofino.leo: Leo's tree ({len(tree.inputs)} inputs, "
            f"{len(tree.leaf_class)} leaves) with the flow table of the artifact {art.sha256[:16]}: do not edit. */\n"
            "#include <core.p4>\n#include <tna.p4>\n\n")
    return "\n".join([head, region(v1, PRELUDE), PARSER + parse_states(v1), _meta(tree),
                      "struct leo_flag_t {\n" + "".join(f"    {f}\n" for f in (*FRONT_FIELDS, f"bit<{s.slot_bits}> slot;",
                                                                  f"bit<{max(1, _deepest(tree))}> present;")) + "}", region(v1, ELEMENTS), control, TAIL])
