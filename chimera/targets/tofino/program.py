"""chimera.p4 for the Tofino Native Architecture (TNA), generated from the v1model program and an artifact.

One source of truth: the headers, the metadata, the actions and the tables (their names, ids, keys and action
parameters: the control-plane contract) are cut from ``p4/chimera.p4`` between fixed marker lines and reused
verbatim, with v1model's ``standard_metadata`` fields renamed to TNA's intrinsic metadata. What v1model and TNA
cannot share is written here:

- the parsers (TNA's ingress parser reads the intrinsic metadata and skips the port metadata; the egress parser
  finds the verdict header to stamp its departure time);
- the state. TNA allows one access per register array per packet, through a ``RegisterAction`` that reads and
  writes in one step, and a register holds at most 32 bits. So every v1model register read-then-write becomes one
  RegisterAction, and the wide or multi-access registers are split: the flow state into one array per field, the
  ring of 56-bit tokens into two 32-bit halves, the S and Z accumulators into one array per (row, element) and per
  row, the counters into one array each;
- the apply block, which calls those actions in v1model's order, at the artifact's own sizes (m, d_v, classes,
  centroids, window, flow slots): a Tofino pipe has no room for v1model's maxima.

Where a stateful ALU has no form for a v1model step, the step is reshaped (docs/pipeline.md, "Tofino"): the packet
count's step and the ring head's wrap give the same bits; the EMAs become occupancy counts that the control plane
averages, which differs (a stateful ALU does not shift, and the class EMAs would be read before the label that
steps them exists). The products of two run-time values in the attention and fusion steps are kept as v1model has
them: a Tofino action has no multiplier, and the compiler's refusal of them is the program's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chimera import paths
from chimera.errors import TargetError
from chimera.formats.artifact import Artifact

#: the v1model program the shared parts are cut from
V1MODEL_SOURCE = paths.P4 / "chimera.p4"

#: (first line starting with, the line that ends the region starting with): the regions reused verbatim
PRELUDE = ('#include "chimera_constants.h"', "/* ------------------------------------------------------------------ parser")
ELEMENTS = ("/* a 63-bit two's complement register value", "control ChimeraIngress(")
TABLES = ("    @id(0x01000001) action nop()", "    apply {")
#: the parser's states after the first (the ingress parser's own start state differs), through its closing brace
PARSE_STATES = ("    state parse_shim {", "control ChimeraVerifyChecksum(")
#: step 10, the verdict header, through the ingress apply block's and control's closing braces
EMIT = ("        /* 10. emit:", "/* ------------------------------------------------------------------ egress")

#: v1model names -> TNA's, in the reused actions and tables
RENAMES = (("sm.ingress_port", "ig_intr_md.ingress_port"), ("sm.egress_spec", "ig_tm_md.ucast_egress_port"),
           ("((bit<64>)sm.ingress_global_timestamp) * 1000", "(bit<64>)ig_intr_md.ingress_mac_tstamp"),
           # an OR into the verdict's flags would be an ALU op on the whole container, which also holds the
           # version: the same bits, ORed in metadata and moved
           ("hdr.verdict.flags = meta.vflags | meta.clock_flag;",
            "meta.vflags = meta.vflags | meta.clock_flag; hdr.verdict.flags = meta.vflags;"),
           ("hdr.verdict.flags = CHIMERA_VFLAG_UNPARSED | meta.clock_flag;",
            "meta.vflags = CHIMERA_VFLAG_UNPARSED | meta.clock_flag; hdr.verdict.flags = meta.vflags;"))


class ProgramError(TargetError):
    """The v1model program no longer has the marker lines the TNA program is cut along."""


#: (the line of v1model's parser after which, what TNA's parser also does there): the header fields the flow key
#: reads, set where the parser extracts them rather than copied in the first stage of the apply block (a stage the
#: chain to the flow state would wait for). The fields a frame does not carry stay 0, as v1model's copies leave
#: them.
PARSER_SETS = (
    ("        pkt.extract(hdr.ipv4);", "meta.src = hdr.ipv4.srcAddr; meta.dst = hdr.ipv4.dstAddr; "
                                       "meta.proto = hdr.ipv4.protocol; meta.ip_len = hdr.ipv4.totalLen;"),
    ("        pkt.extract(hdr.tcp);", "meta.sport = hdr.tcp.srcPort; meta.dport = hdr.tcp.dstPort; "
                                      "meta.tflags = hdr.tcp.flags;"),
    ("        pkt.extract(hdr.udp);", "meta.sport = hdr.udp.srcPort; meta.dport = hdr.udp.dstPort;"))


def parse_states(v1: str) -> str:
    """v1model's parser states, each extract of a header the flow key reads followed by ``PARSER_SETS``' fields."""
    text = region(v1, PARSE_STATES)
    for line, sets in PARSER_SETS:
        if text.count(line + "\n") != 1:
            raise ProgramError(f"{V1MODEL_SOURCE.name}'s parser has no single line {line.strip()!r}",
                               "update chimera/targets/tofino/program.py's PARSER_SETS with the v1model parser")
        text = text.replace(line + "\n", f"{line}\n        {sets}\n")
    return text


def region(text: str, bounds: tuple[str, str]) -> str:
    """The lines of ``text`` from the first starting with ``bounds[0]`` up to (not including) the first after it
    starting with ``bounds[1]``."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(bounds[0])), None)
    if start is None:
        raise ProgramError(f"{V1MODEL_SOURCE.name} has no line starting with {bounds[0]!r}",
                           "the TNA program is cut from it along fixed lines: update "
                           "chimera/targets/tofino/program.py's markers with the v1model program")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(bounds[1])), None)
    if end is None:
        raise ProgramError(f"{V1MODEL_SOURCE.name} has no line starting with {bounds[1]!r} after {bounds[0]!r}",
                           "update chimera/targets/tofino/program.py's markers with the v1model program")
    return "\n".join(lines[start:end])


@dataclass(frozen=True)
class Sizes:
    """The artifact's sizes the TNA program is unrolled and sized for."""

    m: int          # random features (rows of S, elements of Z)
    d_v: int        # value dimensions
    classes: int
    centroids: int
    window: int
    flow_slots: int
    sample_slots: int
    iat_buckets: int

    @property
    def slot_bits(self) -> int:
        """The flow slot's width: a register index is a field of exactly its array's index width on Tofino (a
        wider one, or an expression, is "too complex for the primitive")."""
        return (self.flow_slots - 1).bit_length()

    @property
    def ring_bits(self) -> int:
        """The ring slot's width: the flow slot, then the head (WINDOW is a power of two)."""
        return self.slot_bits + (self.window - 1).bit_length()

    @staticmethod
    def of(art: Artifact) -> "Sizes":
        return Sizes(m=art.c("RF_FEATURES"), d_v=art.c("D_V"), classes=art.c("NUM_CLASSES"),
                     centroids=art.c("NUM_CENTROIDS"), window=art.c("WINDOW"), flow_slots=art.c("FLOW_SLOTS"),
                     sample_slots=art.c("SAMPLE_SLOTS"), iat_buckets=art.c("IAT_BUCKETS"))


def _reg(name: str, width: int, size: int, rid: int | None = None, index: int = 32) -> str:
    ann = f"@id(0x{rid:08X}) " if rid is not None else ""
    return f"    {ann}Register<bit<{width}>, bit<{index}>>({size}) {name};"


def _ra(reg: str, name: str, width: int, body: str, index: int = 32) -> str:
    return (f"    RegisterAction<bit<{width}>, bit<{index}>, bit<{width}>>({reg}) {name} = {{\n"
            f"        void apply(inout bit<{width}> v, out bit<{width}> rv) {{ {body} }}\n    }};")


def flow_registers(s: Sizes) -> list[str]:
    """The flow state ``flow_front`` reads and writes (signature, packet count, last arrival, orientation), each with
    the RegisterActions ``flow_front`` picks from (one per packet), indexed by the slot's own width."""
    b = s.slot_bits
    return [_reg("reg_sig", 32, s.flow_slots, index=b),
            _ra("reg_sig", "sig_swap", 32, "rv = 0; if (v != meta.crc) { rv = 1; } v = meta.crc;", b),
            # v1model's step, rv = v; if (v != 0 && mismatch) v = 1; else if (v != 0xFFFF) v = v + 1, needs three
            # comparisons and a stateful ALU has two. With a mismatch it always ends at 1 (v = 0 takes the second
            # branch: 0 + 1), so the apply block picks one of two actions by the mismatch: the same bits.
            _reg("reg_pkts", 16, s.flow_slots, index=b),
            _ra("reg_pkts", "pkts_step", 16, "rv = v; if (v != 0xFFFF) { v = v + 1; }", b),
            _ra("reg_pkts", "pkts_restart", 16, "rv = v; v = 1;", b),
            _reg("reg_last", 32, s.flow_slots, index=b), _ra("reg_last", "last_swap", 32, "rv = v; v = meta.tsu;", b),
            # the orientation is the first packet's swap, and the direction swap ^ orientation. The stateful ALU
            # returns the direction, 0 where the flow starts, and tells the start itself (as the count's step: a new
            # signature picks dir_restart; otherwise a count of 0 is meta.fresh's condition), so that neither it nor
            # the flow's start waits a stage for the other. 16 bits wide: a stateful ALU reads fields of its
            # register's width, and the count is 16 bits.
            _reg("reg_orient", 16, s.flow_slots, index=b),
            _ra("reg_orient", "dir_step", 16, "if (meta.pkts == 0) { v = (bit<16>)meta.swap; rv = 0; } "
                "else { rv = v ^ (bit<16>)meta.swap; }", b),
            _ra("reg_orient", "dir_restart", 16, "v = (bit<16>)meta.swap; rv = 0;", b)]


def ingress(locals_: str, body: str, local: str, s: Sizes, late: str | None = None) -> str:
    """TNA's ingress control, with ``locals_`` (its metadata instances), the CRC-32 flow hash, the IAT bucket's
    table and the front's tables (``front_tables``, on ``local``, the instance holding FRONT_FIELDS) declared,
    around ``body`` (state, tables, apply block)."""
    return ("control ChimeraIngress(inout headers_t hdr, inout meta_t meta, in ingress_intrinsic_metadata_t "
            "ig_intr_md,\n                       in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,\n"
            "                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,\n"
            "                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {\n"
            f"{locals_}    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash;\n"
            f"{front_tables(local, s, late)}\n{body}")


def bitlen_table(name: str) -> str:
    """BIT_LENGTH32(meta.units, meta.bitlen) as a table: v1model's binary search shifts conditionally, five
    dependent steps in one action, which no Tofino stage does; a ternary table on the highest set bit (one entry
    per bit, and one for 0) gives the same number in one lookup. Its entries are constant, part of the program."""
    entries = [f"            32w0 &&& 32w0xFFFFFFFF : {name}_set(0);"]
    entries += [f"            32w0x{1 << k:X} &&& 32w0x{(0xFFFFFFFF << k) & 0xFFFFFFFF:X} : {name}_set({k + 1});"
                for k in range(32)]
    return (f"    action {name}_set(bit<8> n) {{ meta.bitlen = n; }}\n"
            f"    table {name} {{\n        key = {{ meta.units: ternary; }}\n        actions = {{ {name}_set; }}\n"
            "        const entries = {\n" + "\n".join(entries) + "\n        }\n        size = 33;\n    }")


def registers(s: Sizes) -> str:
    """The state as TNA registers, each with the one RegisterAction a packet applies to it."""
    b = s.slot_bits
    out = ["    /* flow state: one array per field, one read-and-write per packet */", *flow_registers(s)]
    out += [_reg("reg_head", 8, s.flow_slots, index=b),
            # (v + 1) & (WINDOW - 1) is two operators in one statement, which a stateful ALU refuses; the head is
            # always below WINDOW (a power of two), so wrapping at WINDOW - 1 is the same bits
            _ra("reg_head", "head_step", 8,
                "if (meta.fresh == 1) { rv = 0; v = 1 & (CHIMERA_WINDOW - 1); } "
                "else if (v == CHIMERA_WINDOW - 1) { rv = v; v = 0; } else { rv = v; v = v + 1; }", b)]
    out.append("    /* the token ring: 56-bit tokens as two 32-bit halves; the slot leaving is the slot written */")
    for half in ("a", "b"):
        out += [_reg(f"reg_ring_{half}", 32, s.flow_slots * s.window, index=s.ring_bits),
                _ra(f"reg_ring_{half}", f"ring_{half}_swap", 32, f"rv = v; v = tna.tok_{half};", s.ring_bits)]
    out.append("    /* S[j][e] and Z[j]: one array each, updated by the entering and the leaving token at once */")
    for j in range(s.m):
        for e in range(s.d_v):
            out += [_reg(f"reg_s_{j}_{e}", 32, s.flow_slots, index=b),
                    _ra(f"reg_s_{j}_{e}", f"s_{j}_{e}_add", 32,
                        f"if (meta.fresh == 1) {{ v = tna.ds_{j}_{e}; }} else {{ v = v + tna.ds_{j}_{e}; }} rv = v;", b)]
        out += [_reg(f"reg_z_{j}", 32, s.flow_slots, index=b),
                _ra(f"reg_z_{j}", f"z_{j}_add", 32,
                    f"if (meta.fresh == 1) {{ v = tna.dz_{j}; }} else {{ v = v + tna.dz_{j}; }} rv = v;", b)]
    # Tofino-shaped (docs/pipeline.md, "Tofino"): v1model's EMA step v + ((u << EMA_FRAC) - v) >> k shifts a
    # difference with the register's own value, which a stateful ALU refuses ("expression too complex for register
    # action"), and the class EMAs are read by the fusion before the label that steps them exists, two accesses in
    # two stages. So the pipe counts what the EMAs average (one increment per packet at the centroid and at the
    # label), and the control plane turns each T_cp's counts into the EMAs and writes the class EMAs the fusion reads
    out.append("    /* occupancy counts, read by the control plane: one increment per packet at the centroid and the label */")
    out += [_reg("reg_centroid_hits", 32, s.centroids),
            _ra("reg_centroid_hits", "centroid_hit", 32, "v = v + 1; rv = v;"),
            _reg("reg_class_hits", 32, s.classes),
            _ra("reg_class_hits", "class_hit", 32, "v = v + 1; rv = v;")]
    out.append("    /* the class EMAs the fusion reads, written by the control plane from the counts */")
    for y in range(s.classes):
        out += [_reg(f"reg_class_ema_{y}", 32, 1),
                _ra(f"reg_class_ema_{y}", f"class_ema_{y}_read", 32, "rv = v;")]
    out.append("    /* counters: evictions, new flows, parsed, unparsed, samples; the clock; the token sample */")
    for name in ("evictions", "new_flows", "parsed", "unparsed", "samples"):
        out += [_reg(f"reg_{name}", 32, 1), _ra(f"reg_{name}", f"count_{name}", 32, "rv = v; v = v + 1;")]
    for half in ("lo", "hi"):
        out += [_reg(f"reg_clock_{half}", 32, 1), _ra(f"reg_clock_{half}", f"clock_{half}_set", 32,
                                                        f"v = tna.now_{half}; rv = v;")]
    out += [_reg("reg_sample", 32, s.sample_slots), _ra("reg_sample", "sample_set", 32, "v = tna.sample; rv = v;")]
    out.append("    /* the packet index's bucket (the IAT bucket's table is the front's) */")
    out.append(bitlen_table("npk_bitlen"))
    return "\n".join(out)


def meta_extra(s: Sizes) -> str:
    """The TNA program's own metadata: RegisterAction inputs and the split values."""
    fields = [*FRONT_FIELDS, f"bit<{s.slot_bits}> slot;", f"bit<{s.ring_bits}> ring;", "bit<32> tok_a;",
              "bit<32> tok_b;", "bit<32> old_a;", "bit<32> old_b;", "bit<32> now_lo;", "bit<32> now_hi;", "bit<32> sample;", "bit<32> n_parsed;"]
    fields += [f"bit<32> ds_{j}_{e};" for j in range(s.m) for e in range(s.d_v)]
    fields += [f"bit<32> dz_{j};" for j in range(s.m)]
    fields += [f"bit<32> ce_{y};" for y in range(s.classes)]
    return "struct tna_meta_t {\n" + "\n".join("    " + f for f in fields) + "\n}"


#: the apply block's start: the port map, the clock, the trace shim (shared by every TNA program here)
SHIM_AND_CLOCK = """        port_map.apply();
        meta.now = (bit<64>)ig_intr_md.ingress_mac_tstamp;
        meta.seq = CHIMERA_NO_SEQ;
        meta.orig_type = hdr.ethernet.etherType;
        meta.clock_flag = 0;
        if (hdr.shim.isValid()) {
            meta.now = hdr.shim.trace_ns;
            meta.seq = hdr.shim.index;
            meta.orig_type = hdr.shim.orig_type;
            meta.clock_flag = CHIMERA_VFLAG_TRACE_CLOCK;
            hdr.shim.setInvalid();
        }
"""
#: the fields a TNA program's own metadata instance holds for the front (``flow_keys``, ``parsed``, ``flow_front``,
#: ``front_tables``): the signature's mismatch, the reversed key's CRC, ``ihl * 4`` and the saturating differences
#: (the flow slot, at its index width, is declared beside them by each program)
FRONT_FIELDS = ("bit<1> ne;", "bit<32> crc_rev;", "bit<16> hl;", "bit<16> len_d;", "bit<32> ip_gt;", "bit<32> ip_lt;",
                "bit<16> port_gt;", "bit<16> port_lt;")


def parsed(local: str) -> str:
    """A frame is classified only where it parses as v1model's program parses it. One condition on every header
    field is more PHV than a gateway reads (4 bytes and 12 bits), so the checks nest; and a gateway compares a
    field with a constant only, so ``totalLen >= ihl * 4`` is a saturating subtraction, ``ihl * 4 |-| totalLen``,
    which is 0 exactly where it holds (``front_tables``). The same frames parse."""
    return f"""        meta.parsed = 0;
        {local}.hl = ihl_hash.get({{10w0, hdr.ipv4.ihl, 2w0}});
        len_check.apply();
        if (ig_prsr_md.parser_err == 0 && hdr.ipv4.isValid()) {{
            if (hdr.ipv4.version == 4 && hdr.ipv4.ihl >= 5 && {local}.len_d == 0) {{
                if (hdr.ipv4.flags[0:0] == 0 && hdr.ipv4.fragOffset == 0) {{
                    if ((hdr.ipv4.protocol != 6 || hdr.tcp.isValid()) && (hdr.ipv4.protocol != 17 || hdr.udp.isValid())) {{
                        meta.parsed = 1;
                    }}
                }}
            }}
        }}
"""


def iat_entries(iat_buckets: int) -> list[tuple[int, int, int, int, int, int, int]]:
    """The IAT bucket's entries, in priority order, as (signature mismatch, its mask, count, its mask, units, their
    mask, bucket): v1model's step 2 in one lookup. A new flow (a new signature, or a count of 0) is bucket 0;
    otherwise the bucket is 1 + the bit length of the gap in IAT units, at most IAT_BUCKETS - 1 (BIT_LENGTH32's
    binary search shifts conditionally, five dependent steps, and the clamp and the add two more: no Tofino stage
    does them, and each costs a stage; an entry per highest set bit gives the number at once)."""
    top = iat_buckets - 2
    out = [(1, 1, 0, 0, 0, 0, 0), (0, 0, 0, 0xFFFF, 0, 0, 0), (0, 0, 0, 0, 0, 0xFFFFFFFF, 1)]
    out += [(0, 0, 0, 0, 1 << k, (0xFFFFFFFF << k) & 0xFFFFFFFF, 1 + min(k + 1, top)) for k in range(32)]
    return out


def iat_table(local: str, iat_buckets: int, late: str | None = None) -> str:
    """``iat_entries`` as a ternary table on the signature's mismatch, the count and the gap (``meta.units``).
    ``late``: a field that also gets the bucket and the direction as one value, ``bucket << 1 | direction`` (Leo
    keeps it for earlier packets; the direction is then a key too, each entry once per direction)."""
    dirs: tuple[int | None, ...] = (None,) if late is None else (0, 1)
    entries = [f"            (1w{a} &&& 1w{am}, 16w{c} &&& 16w0x{cm:X}, 32w0x{u:X} &&& 32w0x{um:X}"
               + (f") : iat_set({b});" if d is None else f", 1w{d}) : iat_set({b}, {b << 1 | d});")
               for a, am, c, cm, u, um, b in iat_entries(iat_buckets) for d in dirs]
    action = ("    action iat_set(bit<8> b) { meta.iat_b = b; }\n" if late is None else
              f"    action iat_set(bit<8> b, bit<8> l) {{ meta.iat_b = b; {late} = l; }}\n")
    dir_key = "" if late is None else " meta.dir: exact;"
    return (action + "    table iat_bucket {\n"
            f"        key = {{ {local}.ne: ternary; meta.pkts: ternary; meta.units: ternary;{dir_key} }}\n"
            "        actions = { iat_set; }\n        const entries = {\n" + "\n".join(entries) +
            f"\n        }}\n        size = {len(entries)};\n    }}")


def swap_table(local: str, slot_bits: int) -> str:
    """Whether the flow key is reversed, ``(src, sport) > (dst, dport)``, from the saturating differences
    (``ip_gt`` is not 0 exactly where src > dst), as one ternary lookup whose action also picks the CRC of the
    canonical key and its slot: nested conditions and the choice after them would cost two stages more."""
    slot = f"{local}.slot"
    return f"""    action key_as_is() {{ meta.swap = 0; {slot} = meta.crc[{slot_bits - 1}:0]; }}
    action key_reversed() {{ meta.swap = 1; meta.crc = {local}.crc_rev; {slot} = {local}.crc_rev[{slot_bits - 1}:0]; }}
    table key_order {{
        key = {{ {local}.ip_gt: ternary; {local}.ip_lt: ternary; {local}.port_gt: ternary; }}
        actions = {{ key_as_is; key_reversed; }}
        const entries = {{
            (32w0 &&& 32w0xFFFFFFFF, 32w0 &&& 32w0xFFFFFFFF, 16w0 &&& 16w0xFFFF) : key_as_is();
            (32w0 &&& 32w0xFFFFFFFF, 32w0 &&& 32w0xFFFFFFFF, 16w0 &&& 16w0) : key_reversed();
            (32w0 &&& 32w0xFFFFFFFF, 32w0 &&& 32w0, 16w0 &&& 16w0) : key_as_is();
        }}
        default_action = key_reversed();
        size = 3;
    }}"""


def front_tables(local: str, s: Sizes, late: str | None = None) -> str:
    """The front's steps that run in an action of a keyless table of their own, with the hash units they read.
    - The comparisons of two fields, as saturating subtractions (``a |-| b`` is 0 exactly where a <= b). In a
      plain statement the compiler folds the subtraction into the condition that reads it, and a gateway cannot
      compute ("condition expression too complex"); a table's action runs in a stage before the condition.
    - ``ihl * 4`` from the hash unit, which reads the 4 bits beside the version without splitting their byte (an
      action's shift would).
    - The reversed key's CRC and the clock in IAT units: an action moves at most 32 bits from the hash units. The
      clock in IAT units is a 32-bit slice of the 64-bit clock at IAT_SHIFT; through the hash unit's crossbar,
      which reads any bits, rather than an action, where the slice would split the clock's containers at that bit
      and the verdict header's timestamp could no longer be written in one action."""
    return f"""    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) ihl_hash;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash_rev;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) tsu_hash;
    action len_check_set() {{ {local}.len_d = {local}.hl |-| hdr.ipv4.totalLen; }}
    table len_check {{ actions = {{ len_check_set; }} default_action = len_check_set(); size = 1; }}
    action order_check_set() {{
        {local}.ip_gt = meta.src |-| meta.dst;
        {local}.ip_lt = meta.dst |-| meta.src;
        {local}.port_gt = meta.sport |-| meta.dport;
        {local}.port_lt = meta.dport |-| meta.sport;
    }}
    table order_check {{ actions = {{ order_check_set; }} default_action = order_check_set(); size = 1; }}
    action crc_rev_set() {{
        {local}.crc_rev = flow_hash_rev.get({{meta.dst, meta.src, meta.dport, meta.sport, meta.proto}});
    }}
    table crc_rev {{ actions = {{ crc_rev_set; }} default_action = crc_rev_set(); size = 1; }}
    action tsu_units_set() {{ meta.tsu = tsu_hash.get({{meta.now[CHIMERA_IAT_SHIFT + 31:CHIMERA_IAT_SHIFT]}}); }}
    table tsu_units {{ actions = {{ tsu_units_set; }} default_action = tsu_units_set(); size = 1; }}
{swap_table(local, s.slot_bits)}
{iat_table(local, s.iat_buckets, late)}"""


def flow_keys(local: str) -> str:
    """Step 0 of v1model's apply block, before its parse check: the header fields, the order of the flow key, its
    CRC and slot, and the clock in IAT units. Nothing here touches state, so it runs for every frame, beside the
    parse check rather than after it (the checks' conditions and these are independent chains of stages). The CRC
    of the canonical key is the CRC of the key as it came or of the key reversed, both hashed at once and chosen
    by the order, rather than hashed after the order is known."""
    return f"""        /* the header fields are the parser's (PARSER_SETS) */
            /* swap where (src, sport) > (dst, dport), by the saturating differences of front_tables; the CRC of
               the canonical key and its slot with it */
            order_check.apply();
            meta.crc = flow_hash.get({{meta.src, meta.dst, meta.sport, meta.dport, meta.proto}});
            crc_rev.apply();
            key_order.apply();
            /* the clock in IAT units, before last_swap stores it (v1model writes it at the end of the packet) */
            tsu_units.apply();
"""


def flow_front(local: str, counters: bool) -> str:
    """Steps 1-2 of v1model's apply block, shared by every TNA program here, for a frame that parsed: the flow
    slot's state (signature, packet count, last arrival, orientation), the IAT bucket and the direction.
    ``local``: the program's own metadata instance (``flow_keys``'), holding ``ne`` (the signature mismatch) and
    ``slot``; ``counters``: count evictions and new flows."""
    flag, slot = f"{local}.ne", f"{local}.slot"
    evictions = "                count_evictions.execute(0);\n" if counters else ""
    new_flows = "                count_new_flows.execute(0);\n" if counters else ""
    return f"""            /* 1. flow state: the signature is always the CRC after this packet; the count restarts on eviction */
            /* (the stateful ALU compares: the mismatch comes back, not the old signature) */
            {flag} = (bit<1>)sig_swap.execute({slot});
            if ({flag} == 1) {{ meta.pkts = pkts_restart.execute({slot}); }}
            else {{ meta.pkts = pkts_step.execute({slot}); }}
            meta.last = last_swap.execute({slot});
            /* the direction, beside the flow's start (dir_step tests the count itself) */
            if ({flag} == 1) {{ meta.dir = (bit<1>)dir_restart.execute({slot}); }}
            else {{ meta.dir = (bit<1>)dir_step.execute({slot}); }}
            /* 2. tokenize: the IAT bucket, 0 for a new flow, in one lookup on the mismatch, the count and the gap */
            meta.units = meta.tsu - meta.last;
            iat_bucket.apply();
            meta.vflags = 0;
            meta.fresh = 0;
            if ({flag} == 1) {{
                meta.fresh = 1;
                if (meta.pkts > 0) {{
                    meta.vflags = CHIMERA_VFLAG_EVICTED;
{evictions}                }}
            }} else if (meta.pkts == 0) {{
                meta.fresh = 1;
            }}
            /* a new flow, or one evicted, starts at 0 */
            if (meta.fresh == 1) {{
                meta.pkts = 0;
                meta.vflags = meta.vflags | CHIMERA_VFLAG_NEW_FLOW;
{new_flows}            }}
"""


def apply_block(s: Sizes) -> str:
    """v1model's apply block, step for step, with every register access one RegisterAction."""
    w: list[str] = []
    a = w.append
    a("    apply {\n" + SHIM_AND_CLOCK + """        active_version.apply();
        params.apply();
""" + flow_keys("tna") + parsed("tna") + """        if (meta.parsed == 1) {
            tna.n_parsed = count_parsed.execute(0);
            tna.now_lo = meta.now[31:0];
            tna.now_hi = meta.now[63:32];
            clock_lo_set.execute(0);
            clock_hi_set.execute(0);
""" + flow_front("tna", counters=True) + """            meta.head = head_step.execute(tna.slot);
            meta.npk = 0xFFFF;
            if (meta.pkts < 0xFFFF) { meta.npk = meta.pkts + 1; }
            /* 3. partition and map */
            meta.lbin = 0;
            meta.fbin = 0;
            meta.fclass = 0;
            meta.c = 0;
            meta.pid = 0;
            meta.pid_d = 0;
            len_range.apply();
            len_fine_range.apply();
            flag_ternary.apply();
            meta.pclass = 0;
            if (meta.proto == 6) { meta.pclass = 1; } else if (meta.proto == 17) { meta.pclass = 2; }
            else if (meta.proto == 1) { meta.pclass = 3; }
            meta.mkey = (((((bit<16>)meta.lbin * CHIMERA_IAT_BUCKETS + (bit<16>)meta.iat_b) * 2 + (bit<16>)meta.dir)
                         * CHIMERA_FLAG_CLASSES + (bit<16>)meta.fclass) * CHIMERA_PROTO_CLASSES) + (bit<16>)meta.pclass;
            map_exact.apply();
            port_vocab_sport.apply();
            port_vocab_dport.apply();
            if (meta.pid == 0 || (meta.pid_d != 0 && meta.pid_d < meta.pid)) { meta.pid = meta.pid_d; }
            meta.units = (bit<32>)meta.npk;
            npk_bitlen.apply();
            if (meta.bitlen > 15) { meta.bitlen = 15; }
            meta.val_len_in = ((bit<16>)meta.fbin) * 2 + (bit<16>)meta.dir;
            meta.val_iat_in = meta.iat_b * 2 + (bit<8>)meta.dir;
            meta.val_flags_in = meta.fclass * CHIMERA_PROTO_CLASSES + meta.pclass;
            meta.val_port_in = meta.pid * 2 + (bit<8>)meta.dir;
            meta.val_index_in = meta.bitlen;
            tna.tok_a = (bit<32>)meta.c | ((bit<32>)meta.val_len_in) << 8 | ((bit<32>)meta.val_iat_in) << 24;
            tna.tok_b = (bit<32>)meta.val_flags_in | ((bit<32>)meta.val_port_in) << 8
                        | ((bit<32>)meta.val_index_in) << 16;
            /* 4. window: the ring slot at head holds the token leaving once the window is full */
            tna.ring = tna.slot ++ meta.head[""" + str(s.ring_bits - s.slot_bits - 1) + """:0];
            tna.old_a = ring_a_swap.execute(tna.ring);
            tna.old_b = ring_b_swap.execute(tna.ring);""")
    for e in range(16):
        a(f"            meta.vin{e} = 0; meta.vout{e} = 0;")
    a("""            meta.has_old = 0;
            if (meta.pkts >= CHIMERA_WINDOW) {
                meta.has_old = 1;
                meta.c_out = tna.old_a[7:0];
                meta.val_len_out = tna.old_a[23:8];
                meta.val_iat_out = tna.old_a[31:24];
                meta.val_flags_out = tna.old_b[7:0];
                meta.val_port_out = tna.old_b[15:8];
                meta.val_index_out = tna.old_b[23:16];
                meta.phik_out = 0;
                phi_out.apply();
                val_len_out.apply();
                val_iat_out.apply();
                val_flags_out.apply();
                val_port_out.apply();
                val_index_out.apply();
            }
            val_len_in.apply();
            val_iat_in.apply();
            val_flags_in.apply();
            val_port_in.apply();
            val_index_in.apply();
            meta.phiq = 0;
            meta.phik = 0;
            phi.apply();
            meta.z = 0;""")
    for e in range(s.d_v):
        a(f"            meta.h{e} = 0;")
    for j in range(s.m):
        a(f"            meta.pqi = EL32(meta.phiq, {j}); meta.pki = EL32(meta.phik, {j}); "
          f"meta.pko = EL32(meta.phik_out, {j});")
        for e in range(s.d_v):
            a(f"            tna.ds_{j}_{e} = (bit<32>)(meta.pki * meta.vin{e});")
            a(f"            if (meta.has_old == 1) {{ tna.ds_{j}_{e} = tna.ds_{j}_{e} - (bit<32>)(meta.pko * meta.vout{e}); }}")
            a(f"            meta.sv = (int<32>)s_{j}_{e}_add.execute(tna.slot);")
            a(f"            meta.h{e} = meta.h{e} + ((int<64>)meta.pqi) * ((int<64>)meta.sv);")
        a(f"            tna.dz_{j} = (bit<32>)meta.pki;")
        a(f"            if (meta.has_old == 1) {{ tna.dz_{j} = tna.dz_{j} - (bit<32>)meta.pko; }}")
        a(f"            meta.zv = (int<32>)z_{j}_add.execute(tna.slot);")
        a("            meta.z = meta.z + ((int<64>)meta.pqi) * ((int<64>)meta.zv);")
    a("            meta.pkts = meta.npk;")
    a("            /* 5. attention and the global layer */")
    for y in range(16):
        a(f"            meta.a{y} = 0; meta.s{y} = 0;")
    a("            w_out.apply();")
    for y in range(s.classes):
        terms = " + ".join(f"((int<64>)EL32(meta.wo{e}, {y})) * meta.h{e}" for e in range(s.d_v))
        a(f"            meta.a{y} = {terms};")
    a("            if (meta.use_window == 0) {")
    for y in range(16):
        a(f"                meta.a{y} = 0; meta.s{y} = 0;")
    a("""                meta.z = 0;
            }
            global_layer.apply();
            /* 6. rules */
            meta.dir8 = (bit<8>)meta.dir;
            meta.pkts8 = 255;
            if (meta.npk < 255) { meta.pkts8 = (bit<8>)meta.npk; }
            meta.hard_hit = 0;
            hard_rules.apply();""")
    for r in range(16):
        a(f"            soft_{r}.apply();")
    a("            /* 7. fusion: fused_y = ALPHA*A_y + BETA*S_y*Z + ((GAMMA*E_y*Z) >> EMA_FRAC), first argmax, margin */")
    for y in range(s.classes):
        a(f"            tna.ce_{y} = class_ema_{y}_read.execute(0);")
        a(f"            meta.a{y} = ((int<64>)(bit<64>)meta.alpha) * meta.a{y} "
          f"+ ((int<64>)(bit<64>)meta.beta) * meta.s{y} * meta.z "
          f"+ ((((int<64>)(bit<64>)meta.gamma) * ((int<64>)(int<32>)tna.ce_{y}) * meta.z) >> CHIMERA_EMA_FRAC);")
    a("            int<64> best = meta.a0;")
    a("            meta.label = 0;")
    for y in range(1, s.classes):
        a(f"            if (meta.a{y} > best) {{ best = meta.a{y}; meta.label = {y}; }}")
    a("            int<64> second = 0;")
    a("            bit<1> have = 0;")
    for y in range(s.classes):
        a(f"            if (meta.label != {y} && (have == 0 || meta.a{y} > second)) {{ second = meta.a{y}; have = 1; }}")
    a("""            if (have == 0) { second = best; }
            bit<64> margin = (bit<64>)(best - second);
            meta.score = 0xFFFFFFFF;
            if (margin <= 64w0xFFFFFFFF) { meta.score = (bit<32>)margin; }
            if (meta.hard_hit == 1 && meta.lambda_h == 1) {
                meta.label = meta.hard_label;
                meta.score = 0xFFFFFFFF;
                meta.vflags = meta.vflags | CHIMERA_VFLAG_HARD_VETO;
            }
            /* 8. two timescales: the occupancy counts the control plane averages (Tofino-shaped) */
            centroid_hit.execute((bit<32>)meta.c);
            class_hit.execute((bit<32>)meta.label);""")
    a("""            /* 9. token sample for the slow control loop */
            if ((tna.n_parsed & ((32w1 << CHIMERA_SAMPLE_SHIFT) - 1)) == 0) {
                tna.sample = ((bit<32>)meta.ip_len) << 16 | ((bit<32>)meta.iat_b) << 12 | ((bit<32>)meta.dir) << 11
                             | ((bit<32>)meta.fclass) << 8 | ((bit<32>)meta.pclass) << 6;
                sample_set.execute(count_samples.execute(0) & (CHIMERA_SAMPLE_SLOTS - 1));
            }
        } else {
            count_unparsed.execute(0);
        }
""")
    return "\n".join(w)


PARSER = """
parser ChimeraIngressParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                            out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        meta.src = 0; meta.dst = 0; meta.proto = 0; meta.ip_len = 0; meta.sport = 0; meta.dport = 0; meta.tflags = 0;
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            CHIMERA_SHIM_ETHERTYPE: parse_shim;
            default: accept;
        }
    }
"""

TAIL = """
control ChimeraIngressDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                               in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.shim);
        pkt.emit(hdr.verdict);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

/* egress: only the verdict header's departure time (the rest of the frame is payload here) */
struct egress_headers_t {
    ethernet_t ethernet;
    verdict_t  verdict;
}

struct egress_meta_t { }

parser ChimeraEgressParser(packet_in pkt, out egress_headers_t hdr, out egress_meta_t meta,
                           out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            CHIMERA_VERDICT_ETHERTYPE: parse_verdict;
            default: accept;
        }
    }
    state parse_verdict {
        pkt.extract(hdr.verdict);
        transition accept;
    }
}

control ChimeraEgress(inout egress_headers_t hdr, inout egress_meta_t meta, in egress_intrinsic_metadata_t eg_intr_md,
                      in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                      inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                      inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (hdr.verdict.isValid()) {
            hdr.verdict.ts_out = (bit<64>)eg_prsr_md.global_tstamp;
        }
    }
}

control ChimeraEgressDeparser(packet_out pkt, inout egress_headers_t hdr, in egress_meta_t meta,
                              in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.verdict);
    }
}

Pipeline(ChimeraIngressParser(), ChimeraIngress(), ChimeraIngressDeparser(),
         ChimeraEgressParser(), ChimeraEgress(), ChimeraEgressDeparser()) pipe;
Switch(pipe) main;
"""


def _tna(text: str) -> str:
    """v1model's standard_metadata names in a reused region, as TNA's."""
    for old, new in RENAMES:
        text = text.replace(old, new)
    return text


def render(art: Artifact, source: Path = V1MODEL_SOURCE) -> str:
    """The TNA program for ``art`` (it includes the artifact's constants header, as chimera.p4 does)."""
    s = Sizes.of(art)
    v1 = source.read_text()
    control = ingress("    tna_meta_t tna;\n",
                      f"{registers(s)}\n\n{_tna(region(v1, TABLES))}\n{apply_block(s)}\n{_tna(region(v1, EMIT))}\n",
                      "tna", s)
    head = (f"/* Generated by chimera.targets.tofino.program from {source.name} and the artifact "
            f"{art.sha256[:16]}: do not edit. */\n#include <core.p4>\n#include <tna.p4>\n\n")
    return "\n".join([head, region(v1, PRELUDE), PARSER + parse_states(v1), meta_extra(s), region(v1, ELEMENTS),
                      control, TAIL])
