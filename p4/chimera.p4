/* Chimera pipeline for BMv2 (v1model, p4c-bm2-ss).
 *
 * Integer semantics: docs/pipeline.md (chimera/reference/pipeline.py executes
 * them bit for bit); the eBPF C (chimera/targets/ebpf/chimera.bpf.c) implements
 * the same. Sizes, widths and coefficients come from the generated constants
 * header, which the eBPF program includes too (p4/chimera_constants.h is the
 * quickstart model's, so this file compiles on its own). Tables and registers are
 * declared at fixed maximum sizes with explicit @id annotations, so
 * p4/chimera.p4info.txtpb is one control-plane contract for every compiled model;
 * the header only sets sizes and arithmetic constants, and loops over them unroll
 * into straight-line code whose constant-false branches p4c removes.
 *
 * Attention is incremental: per-flow S[m][d_v] and Z[m] accumulators (registers)
 * updated by the token entering and the token leaving the window; the value and
 * phi tables therefore exist twice (_in, _out), since a table applies once.
 *
 * Tofino notes (where BMv2 allows what Tofino would not):
 *  - registers are read and written several times per packet (S rows, EMA);
 *    Tofino allows one access per register array per pass: it would need one
 *    array per row / centroid and RegisterActions.
 *  - the m x d_v accumulator updates and the fusion are 64-bit multiplies;
 *    Tofino has no 64-bit multiply: phi/values would be powers of two (shifts)
 *    and the accumulators 32-bit.
 *  - the bit lengths are if-chains here; on Tofino, lpm tables.
 * Nothing divides; work per packet is bounded by the constants.
 *
 * Clock (docs/pipeline.md, "Clocks"): a frame carrying the trace-time shim
 * (chimera/formats/shim.py) is classified on the shim's trace_ns, its index goes
 * into the verdict's seq, and the shim is not emitted (the verdict header takes
 * its place). A frame without a shim is classified on BMv2's own clock
 * (ingress_global_timestamp, microseconds, x1000 to ns).
 */
#include <core.p4>
#include <v1model.p4>

#include "chimera_constants.h"
#ifndef CHIMERA_EMA_SHIFT2
#define CHIMERA_EMA_SHIFT2 0
#endif
/* the EMA step for d = u - C: eta = 2^-EMA_SHIFT (+ 2^-EMA_SHIFT2 when EMA_SHIFT2 > 0), shifts and adds only */
#if CHIMERA_EMA_SHIFT2 > 0
#define EMA_STEP(d) (((d) >> CHIMERA_EMA_SHIFT) + ((d) >> CHIMERA_EMA_SHIFT2))
#else
#define EMA_STEP(d) ((d) >> CHIMERA_EMA_SHIFT)
#endif

#define MAX_CLASSES 16
#define MAX_WINDOW 16
#define MAX_SOFT 16
#define MAX_CENTROIDS 64
#define MAX_FLOW_SLOTS 65536
#define MAX_FEATURES 16
#define MAX_DV 16
#define MAX_LEN_FINE 256
#define MAX_SAMPLE_SLOTS 65536
#define NVERS 2

#if CHIMERA_NUM_CLASSES > MAX_CLASSES
#error "chimera.p4 supports at most 16 classes"
#endif
#if CHIMERA_WINDOW > MAX_WINDOW
#error "chimera.p4 supports a window of at most 16"
#endif
#if CHIMERA_SOFT_RULES > MAX_SOFT
#error "chimera.p4 supports at most 16 soft rules"
#endif
#if CHIMERA_NUM_CENTROIDS > MAX_CENTROIDS
#error "chimera.p4 supports at most 64 centroids"
#endif
#if CHIMERA_FLOW_SLOTS > MAX_FLOW_SLOTS
#error "chimera.p4 supports at most 65536 flow slots"
#endif
#if CHIMERA_RF_FEATURES > MAX_FEATURES || CHIMERA_D_V > MAX_DV
#error "chimera.p4 supports at most 16 random features and 16 value dimensions"
#endif
#if CHIMERA_LEN_FINE > MAX_LEN_FINE || CHIMERA_SAMPLE_SLOTS > MAX_SAMPLE_SLOTS
#error "chimera.p4 supports at most 256 fine length bins and 65536 sample slots"
#endif
#if !CHIMERA_AGG_INCREMENTAL
#error "chimera.p4 implements the incremental attention form only (batch is the reference's cross-check)"
#endif

/* unrolled loops: two macro families, so a loop body may hold an inner loop */
#define FOR16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define FOR16B(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define FOR16BA(M, a) M(a, 0) M(a, 1) M(a, 2) M(a, 3) M(a, 4) M(a, 5) M(a, 6) M(a, 7) M(a, 8) M(a, 9) M(a, 10) \
    M(a, 11) M(a, 12) M(a, 13) M(a, 14) M(a, 15)
/* (index, hex digit) pairs, so @id annotations get literal ids by token pasting */
#define FOR16H(M) M(0, 0) M(1, 1) M(2, 2) M(3, 3) M(4, 4) M(5, 5) M(6, 6) M(7, 7) M(8, 8) M(9, 9) M(10, a) \
    M(11, b) M(12, c) M(13, d) M(14, e) M(15, f)
#define FOR64(M) FOR16(M) M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) \
    M(29) M(30) M(31) M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) M(40) M(41) M(42) M(43) M(44) M(45) \
    M(46) M(47) M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)
/* decision-point coverage (chimera/formats/coverage.py): counted only in -DCHIMERA_COVERAGE builds; the
 * register exists in every build, so the P4Info is one contract */
#ifdef CHIMERA_COVERAGE
#define COVER(point) { reg_cov.read(cov_tmp, CHIMERA_COV_##point); reg_cov.write(CHIMERA_COV_##point, cov_tmp + 1); }
#define SOFT_HIT(i) if (soft_##i.apply().hit) { soft_any = 1; }
#else
#define COVER(point) { }
#define SOFT_HIT(i) soft_##i.apply();
#endif
/* out := bit_length(x) for a bit<32> x (x is consumed) */
#define BIT_LENGTH32(x, out) \
    out = 0; \
    if (x >= 32w0x10000) { out = out + 16; x = x >> 16; } \
    if (x >= 32w0x100) { out = out + 8; x = x >> 8; } \
    if (x >= 32w0x10) { out = out + 4; x = x >> 4; } \
    if (x >= 32w0x4) { out = out + 2; x = x >> 2; } \
    if (x >= 32w0x2) { out = out + 1; x = x >> 1; } \
    if (x > 0) { out = out + 1; }

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etherType;
}

/* The fields come from chimera/formats/verdict.py through the generated header, as for the eBPF C. */
header verdict_t {
    CHIMERA_VERDICT_FIELDS_P4
}

/* The trace-time shim, from chimera/formats/shim.py through the generated header. */
header shim_t {
    CHIMERA_SHIM_FIELDS_P4
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header ipv4_options_t {
    varbit<320> options;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

struct headers_t {
    ethernet_t     ethernet;
    shim_t         shim;
    verdict_t      verdict;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    tcp_t          tcp;
    udp_t          udp;
}

#define VEC_FIELDS(i) int<32> vin##i; int<32> vout##i; int<64> h##i; int<64> a##i; int<64> s##i; bit<512> wo##i; \
    bit<32> sn##i; bit<32> zn##i;

struct meta_t {
    bit<1>  parsed;
    bit<1>  ver;
    bit<1>  use_window;
    bit<1>  lambda_h;
    bit<32> alpha;
    bit<32> beta;
    bit<32> gamma;
    bit<16> map_version;
    bit<32> src;
    bit<32> dst;
    bit<16> sport;
    bit<16> dport;
    bit<8>  proto;
    bit<8>  tflags;
    bit<16> ip_len;
    bit<1>  swap;
    bit<32> lo_ip;
    bit<32> hi_ip;
    bit<16> lo_p;
    bit<16> hi_p;
    bit<32> crc;
    bit<32> slot;
    bit<32> sig;
    bit<16> pkts;
    bit<16> npk;
    bit<32> last;
    bit<1>  orient;
    bit<8>  head;
    bit<8>  vflags;
    bit<8>  clock_flag;   /* VFLAG_TRACE_CLOCK when the frame carried the shim */
    bit<32> seq;          /* the shim's index, NO_SEQ without one */
    bit<16> orig_type;    /* the frame's own EtherType (under a shim, the shim's orig_type) */
    bit<64> now;          /* the classification clock: the shim's trace_ns, else the switch's own (ns) */
    bit<64> ts_ns;
    bit<32> tsu;
    bit<32> units;
    bit<8>  bitlen;
    bit<8>  iat_b;
    bit<1>  dir;
    bit<8>  dir8;
    bit<8>  pkts8;
    bit<8>  lbin;
    bit<8>  fbin;
    bit<8>  fclass;
    bit<8>  pclass;
    bit<16> mkey;
    bit<8>  c;
    bit<8>  c_out;
    bit<8>  pid;
    bit<8>  pid_d;
    bit<1>  fresh;
    bit<1>  has_old;
    bit<32> ring_idx;
    bit<64> old;
    bit<64> tok;
    bit<16> val_len_in;
    bit<16> val_len_out;
    bit<8>  val_iat_in;
    bit<8>  val_iat_out;
    bit<8>  val_flags_in;
    bit<8>  val_flags_out;
    bit<8>  val_port_in;
    bit<8>  val_port_out;
    bit<8>  val_index_in;
    bit<8>  val_index_out;
    bit<512> phiq;
    bit<512> phik;
    bit<512> phik_out;
    int<32> pqi;
    int<32> pki;
    int<32> pko;
    int<32> sv;
    int<32> zv;
    int<64> z;
    bit<1>  hard_hit;
    bit<8>  hard_rule;
    bit<8>  hard_label;
    bit<8>  label;
    bit<32> score;
    FOR16(VEC_FIELDS)
}

/* ------------------------------------------------------------------ parser */

parser ChimeraParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            CHIMERA_SHIM_ETHERTYPE: parse_shim;
            default: accept;
        }
    }
    state parse_shim {
        pkt.extract(hdr.shim);
        transition select(hdr.shim.orig_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4, 5): parse_frag;
            (4, 6 .. 15): parse_options;
            default: accept;       /* bad version or IHL: unparsed */
        }
    }
    state parse_options {
        pkt.extract(hdr.ipv4_options, (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition parse_frag;
    }
    state parse_frag {
        transition select(hdr.ipv4.flags[0:0], hdr.ipv4.fragOffset) {
            (0, 0): parse_l4;
            default: accept;       /* a fragment: no L4 header for us */
        }
    }
    state parse_l4 {
        transition select(hdr.ipv4.protocol) {
            6: parse_tcp;
            17: parse_udp;
            default: accept;
        }
    }
    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control ChimeraVerifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

/* ------------------------------------------------------------------ ingress */

/* a 63-bit two's complement register value, sign-extended to int<64> */
#define S63(x) ((int<64>)((int<63>)(x)))
/* 16 signed 32-bit values packed in a bit<512> (element i at bits 32i .. 32i+31) */
#define EL32(x, i) ((int<32>)x[32 * i + 31 : 32 * i])
#define EL64(x, i) ((int<64>)x[64 * i + 63 : 64 * i])

control ChimeraIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @id(0x16000002) register<bit<32>>(MAX_FLOW_SLOTS) reg_sig;
    @id(0x16000003) register<bit<32>>(MAX_FLOW_SLOTS) reg_last;
    @id(0x16000004) register<bit<16>>(MAX_FLOW_SLOTS) reg_pkts;
    @id(0x16000005) register<bit<1>>(MAX_FLOW_SLOTS) reg_orient;
    @id(0x16000006) register<bit<8>>(MAX_FLOW_SLOTS) reg_head;
    @id(0x16000007) register<bit<64>>(1048576) reg_ring;        /* MAX_FLOW_SLOTS * MAX_WINDOW tokens */
    /* The EMA registers hold a signed value (docs/pipeline.md: in [-1, 2^EMA_FRAC]) in 63-bit two's complement:
     * BMv2's Thrift register_read converts a register to a signed 64-bit integer and saturates anything at or
     * above 2^63, so a negative value kept in 64 bits would read back as INT64_MAX (found by the fuzzer). */
    @id(0x16000008) register<bit<63>>(MAX_CENTROIDS) reg_ema;
    @id(0x16000009) register<bit<64>>(8) reg_counters;         /* evictions, new flows, parsed, unparsed, samples */
    @id(0x1600000A) register<bit<512>>(1048576) reg_s;         /* S[j] rows: MAX_FLOW_SLOTS * MAX_FEATURES, d_v x int32 */
    @id(0x1600000B) register<bit<512>>(MAX_FLOW_SLOTS) reg_z;  /* Zacc: m x int32 */
    @id(0x1600000C) register<bit<63>>(MAX_CLASSES) reg_class_ema;
    @id(0x1600000D) register<bit<32>>(MAX_SAMPLE_SLOTS) reg_sample;
    @id(0x1600000E) register<bit<64>>(1) reg_clock;            /* the last `now` classified on: the control plane's clock */
    @id(0x1600000F) register<bit<64>>(CHIMERA_COV_POINTS) reg_cov; /* decision-point coverage (coverage builds) */

    @id(0x01000001) action nop() { }
    @id(0x0100000B) action set_active(bit<1> ver) { meta.ver = ver; }
    @id(0x01000002) action set_egress(bit<9> port) { sm.egress_spec = port; }
    @id(0x01000003) action set_params(bit<32> alpha, bit<32> beta, bit<32> gamma, bit<1> lambda_h,
                                      bit<16> map_version, bit<1> use_window) {
        meta.alpha = alpha;
        meta.beta = beta;
        meta.gamma = gamma;
        meta.lambda_h = lambda_h;
        meta.map_version = map_version;
        meta.use_window = use_window;
    }
    @id(0x01000004) action set_len_bin(bit<8> bin) { meta.lbin = bin; }
    @id(0x0100000C) action set_fine_bin(bit<8> bin) { meta.fbin = bin; }
    @id(0x01000005) action set_flag_class(bit<8> cls) { meta.fclass = cls; }
    @id(0x01000006) action set_centroid(bit<8> centroid) { meta.c = centroid; }
    @id(0x0100000D) action set_port_id(bit<8> id) { meta.pid = id; }
    @id(0x01000013) action set_dport_id(bit<8> id) { meta.pid_d = id; }
#define ADD_V(i) if (i < CHIMERA_D_V) { meta.vin##i = meta.vin##i + EL32(v, i); }
#define ADD_VOUT(i) if (i < CHIMERA_D_V) { meta.vout##i = meta.vout##i + EL32(v, i); }
    /* a value row of the entering token (SumReduce: the five sub-token tables add into vin) */
    @id(0x0100000E) action val_in(bit<512> v) { FOR16(ADD_V) }
    /* a value row of the token leaving the window */
    @id(0x0100000F) action val_out(bit<512> v) { FOR16(ADD_VOUT) }
    @id(0x01000010) action set_phi(bit<512> q, bit<512> k) { meta.phiq = q; meta.phik = k; }
    @id(0x01000011) action set_phi_out(bit<512> k) { meta.phik_out = k; }
#define WOUT_SET(i) meta.wo##i = w##i;
    @id(0x01000012) action set_wout(bit<512> w0, bit<512> w1, bit<512> w2, bit<512> w3, bit<512> w4, bit<512> w5,
                                    bit<512> w6, bit<512> w7, bit<512> w8, bit<512> w9, bit<512> w10, bit<512> w11,
                                    bit<512> w12, bit<512> w13, bit<512> w14, bit<512> w15) {
        FOR16(WOUT_SET)
    }
#define ADD_G(i) if (i < CHIMERA_NUM_CLASSES) { meta.a##i = meta.a##i + EL64(g, i); }
    /* global layer: Z += Gz; A_y += G[y] (g packs 16 signed 64-bit values) */
    @id(0x01000008) action glob_add(bit<64> gz, bit<1024> g) {
        meta.z = meta.z + (int<64>)gz;
        meta.vflags = meta.vflags | CHIMERA_VFLAG_GLOBAL_HIT;
        FOR16(ADD_G)
    }
    @id(0x01000009) action hard_hit(bit<8> rule, bit<8> label) {
        meta.hard_hit = 1;
        meta.hard_rule = rule;
        meta.hard_label = label;
    }
#define ADD_SOFT(i) if (i < CHIMERA_NUM_CLASSES) { meta.s##i = meta.s##i + (int<64>)EL32(w, i); }
    /* a soft rule fired: S_y += W[r, y] (each soft table holds one rule's entries) */
    @id(0x0100000A) action soft_add(bit<512> w) { FOR16(ADD_SOFT) }

    /* The active model version: one keyless table whose default action the control plane
     * modifies in a single P4Runtime write (BMv2's P4Runtime server does not write registers). */
    @id(0x02000008) table active_version {
        actions = { set_active; }
        default_action = set_active(0);
        size = 1;
    }
    @id(0x02000001) table port_map {
        key = { sm.ingress_port: exact @name("ingress_port"); }
        actions = { set_egress; nop; }
        default_action = nop();
        size = 64;
    }
    @id(0x02000002) table params {
        key = { meta.ver: exact @name("ver"); }
        actions = { set_params; nop; }
        default_action = nop();
        size = NVERS;
    }
    @id(0x02000003) table len_range {
        key = { meta.ver: exact @name("ver"); meta.ip_len: range @name("ip_len"); }
        actions = { set_len_bin; nop; }
        default_action = nop();
        size = 64;
    }
    @id(0x02000009) table len_fine_range {
        key = { meta.ver: exact @name("ver"); meta.ip_len: range @name("ip_len"); }
        actions = { set_fine_bin; nop; }
        default_action = nop();
        size = 512;      /* NVERS * MAX_LEN_FINE */
    }
    @id(0x02000004) table flag_ternary {
        key = { meta.ver: exact @name("ver"); meta.tflags: ternary @name("tcp_flags"); }
        actions = { set_flag_class; nop; }
        default_action = nop();
        size = 32;
    }
    @id(0x02000005) table map_exact {
        key = { meta.ver: exact @name("ver"); meta.mkey: exact @name("map_key"); }
        actions = { set_centroid; nop; }
        default_action = nop();
        size = 32768;    /* NVERS * MAP_KEYS */
    }
    /* the port vocabulary, once per port of the packet (a table applies once per pass): same entries */
    @id(0x0200000A) table port_vocab_sport {
        key = { meta.ver: exact @name("ver"); meta.sport: exact @name("port"); }
        actions = { set_port_id; nop; }
        default_action = nop();   /* any other port: id 0 */
        size = 128;
    }
    @id(0x0200000E) table port_vocab_dport {
        key = { meta.ver: exact @name("ver"); meta.dport: exact @name("port"); }
        actions = { set_dport_id; nop; }
        default_action = nop();
        size = 128;
    }
/* value tables of the five sub-tokens, one copy for the entering token and one for the leaving token
 * (a P4 table is applied at most once per packet); the control plane installs the same rows in both */
#define VAL_TABLE(tbl, hi, sz) \
    @id(0x020300##hi) table tbl##_in { \
        key = { meta.ver: exact @name("ver"); meta.tbl##_in: exact @name("id"); } \
        actions = { val_in; nop; } \
        default_action = nop(); \
        size = sz; \
    } \
    @id(0x020301##hi) table tbl##_out { \
        key = { meta.ver: exact @name("ver"); meta.tbl##_out: exact @name("id"); } \
        actions = { val_out; nop; } \
        default_action = nop(); \
        size = sz; \
    }
    VAL_TABLE(val_len, 00, 1024)
    VAL_TABLE(val_iat, 01, 64)
    VAL_TABLE(val_flags, 02, 64)
    VAL_TABLE(val_port, 03, 256)
    VAL_TABLE(val_index, 04, 32)
    @id(0x0200000B) table phi {
        key = { meta.ver: exact @name("ver"); meta.c: exact @name("centroid"); }
        actions = { set_phi; nop; }
        default_action = nop();
        size = 128;      /* NVERS * MAX_CENTROIDS */
    }
    @id(0x0200000C) table phi_out {
        key = { meta.ver: exact @name("ver"); meta.c_out: exact @name("centroid"); }
        actions = { set_phi_out; nop; }
        default_action = nop();
        size = 128;
    }
    @id(0x0200000D) table w_out {
        key = { meta.ver: exact @name("ver"); }
        actions = { set_wout; nop; }
        default_action = nop();
        size = NVERS;
    }
    @id(0x02000006) table global_layer {
        key = { meta.ver: exact @name("ver"); meta.c: ternary @name("centroid"); meta.pclass: ternary @name("proto_class"); }
        actions = { glob_add; nop; }
        default_action = nop();
        size = 512;
    }
#define RULE_KEY \
        meta.ver: exact @name("ver"); meta.proto: ternary @name("proto"); meta.tflags: ternary @name("tcp_flags"); \
        meta.dir8: ternary @name("dir"); meta.pkts8: ternary @name("flow_pkts"); \
        meta.sport: ternary @name("sport"); meta.dport: ternary @name("dport"); meta.ip_len: ternary @name("ip_len");
    @id(0x02000007) table hard_rules {
        key = { RULE_KEY }
        actions = { hard_hit; nop; }
        default_action = nop();
        size = 512;
    }
#define SOFT_TABLE(i, h) \
    @id(0x0202000##h) table soft_##i { \
        key = { RULE_KEY } \
        actions = { soft_add; nop; } \
        default_action = nop(); \
        size = 256; \
    }
    FOR16H(SOFT_TABLE)

    apply {
        bit<64> cnt;
        bit<64> n_parsed;
        bit<32> zero32 = 0;
        bit<512> row;
        bit<512> zrow;
        bit<64> cov_tmp = 0;
        bit<1> soft_any = 0;
        port_map.apply();
        /* the clock: the trace's (the shim, which leaves here: the verdict header takes its place) or BMv2's own */
        meta.now = ((bit<64>)sm.ingress_global_timestamp) * 1000;
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
        /* every packet, classified or not, carries the active map version */
        active_version.apply();
        params.apply();
        meta.parsed = 0;
        if (sm.parser_error == error.NoError && hdr.ipv4.isValid() && hdr.ipv4.version == 4 && hdr.ipv4.ihl >= 5
                && hdr.ipv4.totalLen >= ((bit<16>)hdr.ipv4.ihl) * 4 && hdr.ipv4.flags[0:0] == 0
                && hdr.ipv4.fragOffset == 0
                && (hdr.ipv4.protocol != 6 || hdr.tcp.isValid()) && (hdr.ipv4.protocol != 17 || hdr.udp.isValid())) {
            meta.parsed = 1;
        }
        if (meta.parsed == 1) {
            COVER(PARSED)
            reg_counters.read(n_parsed, 2);
            reg_counters.write(2, n_parsed + 1);
            reg_clock.write(0, meta.now);
            /* 0. header fields (ports and flags are 0 for other protocols) */
            meta.src = hdr.ipv4.srcAddr;
            meta.dst = hdr.ipv4.dstAddr;
            meta.proto = hdr.ipv4.protocol;
            meta.ip_len = hdr.ipv4.totalLen;
            meta.sport = 0;
            meta.dport = 0;
            meta.tflags = 0;
            if (hdr.tcp.isValid()) {
                meta.sport = hdr.tcp.srcPort;
                meta.dport = hdr.tcp.dstPort;
                meta.tflags = hdr.tcp.flags;
            } else if (hdr.udp.isValid()) {
                meta.sport = hdr.udp.srcPort;
                meta.dport = hdr.udp.dstPort;
            }
            /* 1. flow slot: CRC-32 of the canonical 5-tuple */
            meta.swap = 0;
            if (meta.src > meta.dst || (meta.src == meta.dst && meta.sport > meta.dport)) {
                meta.swap = 1;
            }
            if (meta.swap == 1) {
                meta.lo_ip = meta.dst; meta.hi_ip = meta.src; meta.lo_p = meta.dport; meta.hi_p = meta.sport;
            } else {
                meta.lo_ip = meta.src; meta.hi_ip = meta.dst; meta.lo_p = meta.sport; meta.hi_p = meta.dport;
            }
            hash(meta.crc, HashAlgorithm.crc32, zero32, {meta.lo_ip, meta.hi_ip, meta.lo_p, meta.hi_p, meta.proto},
                 64w4294967296);
            meta.slot = meta.crc & (CHIMERA_FLOW_SLOTS - 1);
            reg_sig.read(meta.sig, meta.slot);
            reg_pkts.read(meta.pkts, meta.slot);
            reg_last.read(meta.last, meta.slot);
            reg_orient.read(meta.orient, meta.slot);
            reg_head.read(meta.head, meta.slot);
            meta.vflags = 0;
            if (meta.pkts > 0 && meta.sig != meta.crc) {
                meta.vflags = meta.vflags | CHIMERA_VFLAG_EVICTED;
                COVER(EVICT)
                reg_counters.read(cnt, 0);
                reg_counters.write(0, cnt + 1);
                meta.pkts = 0;
            }
            /* 2. tokenize: the flow clock is now (ns) >> IAT_SHIFT */
            meta.ts_ns = meta.now;
            meta.tsu = (bit<32>)(meta.ts_ns >> CHIMERA_IAT_SHIFT);
            meta.fresh = 0;
            if (meta.pkts == 0) {
                meta.vflags = meta.vflags | CHIMERA_VFLAG_NEW_FLOW;
                COVER(NEW_FLOW)
                reg_counters.read(cnt, 1);
                reg_counters.write(1, cnt + 1);
                meta.sig = meta.crc;
                meta.orient = meta.swap;
                meta.head = 0;
                meta.iat_b = 0;
                meta.fresh = 1;   /* accumulators start from zero */
            } else {
                COVER(SAME_FLOW)
                if (meta.tsu < meta.last) { COVER(CLOCK_WRAP) }
                meta.units = meta.tsu - meta.last;
                BIT_LENGTH32(meta.units, meta.bitlen)
                if (meta.bitlen > CHIMERA_IAT_BUCKETS - 2) { meta.bitlen = CHIMERA_IAT_BUCKETS - 2; }
                meta.iat_b = 1 + meta.bitlen;
                if (meta.iat_b == CHIMERA_IAT_BUCKETS - 1) { COVER(IAT_TOP) }
            }
            meta.dir = meta.swap ^ meta.orient;
            if (meta.dir == 1) { COVER(REVERSE_DIR) }
            if (meta.pkts == 0xFFFF) { COVER(PKTS_SATURATED) }
            meta.npk = 0xFFFF;
            if (meta.pkts < 0xFFFF) { meta.npk = meta.pkts + 1; }
            /* 3. partition and map: centroid from the coarse key; the five value sub-tokens */
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
            if (meta.pclass == 1) { COVER(PROTO_TCP) } else if (meta.pclass == 2) { COVER(PROTO_UDP) }
            else if (meta.pclass == 3) { COVER(PROTO_ICMP) } else { COVER(PROTO_OTHER) }
            meta.mkey = (((((bit<16>)meta.lbin * CHIMERA_IAT_BUCKETS + (bit<16>)meta.iat_b) * 2 + (bit<16>)meta.dir)
                         * CHIMERA_FLAG_CLASSES + (bit<16>)meta.fclass) * CHIMERA_PROTO_CLASSES) + (bit<16>)meta.pclass;
            map_exact.apply();
            port_vocab_sport.apply();
            port_vocab_dport.apply();
            if (meta.pid != 0 && meta.pid_d != 0) { COVER(PORT_BOTH) }
            /* the higher-ranked (smaller, non-zero) id of the two ports */
            if (meta.pid == 0 || (meta.pid_d != 0 && meta.pid_d < meta.pid)) { meta.pid = meta.pid_d; }
            if (meta.pid != 0) { COVER(PORT_HIT) } else { COVER(PORT_MISS) }
            meta.units = (bit<32>)meta.npk;
            BIT_LENGTH32(meta.units, meta.bitlen)
            if (meta.bitlen > 15) { meta.bitlen = 15; }
            meta.val_len_in = ((bit<16>)meta.fbin) * 2 + (bit<16>)meta.dir;
            meta.val_iat_in = meta.iat_b * 2 + (bit<8>)meta.dir;
            meta.val_flags_in = meta.fclass * CHIMERA_PROTO_CLASSES + meta.pclass;
            meta.val_port_in = meta.pid * 2 + (bit<8>)meta.dir;
            meta.val_index_in = meta.bitlen;
            meta.tok = (bit<64>)meta.c | ((bit<64>)meta.val_len_in) << 8 | ((bit<64>)meta.val_iat_in) << 24
                       | ((bit<64>)meta.val_flags_in) << 32 | ((bit<64>)meta.val_port_in) << 40
                       | ((bit<64>)meta.val_index_in) << 48;
            /* 4. window: the value of the entering token, and of the token leaving (ring[head] when full) */
#define ZERO_V(i) meta.vin##i = 0; meta.vout##i = 0;
            FOR16(ZERO_V)
            meta.ring_idx = meta.slot * MAX_WINDOW + (bit<32>)(meta.head & (CHIMERA_WINDOW - 1));
            meta.has_old = 0;
            if (meta.pkts >= CHIMERA_WINDOW) {
                COVER(WINDOW_FULL)
                meta.has_old = 1;
                reg_ring.read(meta.old, meta.ring_idx);
                meta.c_out = meta.old[7:0];
                meta.val_len_out = meta.old[23:8];
                meta.val_iat_out = meta.old[31:24];
                meta.val_flags_out = meta.old[39:32];
                meta.val_port_out = meta.old[47:40];
                meta.val_index_out = meta.old[55:48];
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
            /* S[j][e] -= phi_k[c_out][j] * vout_e; S[j][e] += phi_k[c][j] * vin_e; h_e += phi_q[c][j] * S[j][e] */
#define ZERO_H(e) meta.h##e = 0;
            FOR16(ZERO_H)
            reg_z.read(zrow, meta.slot);
            if (meta.fresh == 1) { zrow = 0; }
            meta.z = 0;
/* A row's new elements go to sn0..sn15 (zn0..zn15 for Z) and the row is rebuilt by concatenation: BMv2's p4c
 * lowers a slice assignment to a constant shift of the element's offset, and refuses shifts above 256 bits
 * (element 9 of a 512-bit row); a concatenation shifts by 32 at a time. Elements past D_V (or m) keep their
 * value. */
#define S_KEEP(e) if (e >= CHIMERA_D_V) { meta.sn##e = row[32 * e + 31 : 32 * e]; }
#define Z_KEEP(j) if (j >= CHIMERA_RF_FEATURES) { meta.zn##j = zrow[32 * j + 31 : 32 * j]; }
#define CAT16(p) meta.p##15 ++ meta.p##14 ++ meta.p##13 ++ meta.p##12 ++ meta.p##11 ++ meta.p##10 ++ meta.p##9 \
    ++ meta.p##8 ++ meta.p##7 ++ meta.p##6 ++ meta.p##5 ++ meta.p##4 ++ meta.p##3 ++ meta.p##2 ++ meta.p##1 ++ meta.p##0
#define S_CELL(e) \
            if (e < CHIMERA_D_V) { \
                meta.sv = EL32(row, e); \
                if (meta.has_old == 1) { meta.sv = meta.sv - meta.pko * meta.vout##e; } \
                meta.sv = meta.sv + meta.pki * meta.vin##e; \
                meta.sn##e = (bit<32>)meta.sv; \
                meta.h##e = meta.h##e + ((int<64>)meta.pqi) * ((int<64>)meta.sv); \
            }
#define S_ROW(j) \
            if (j < CHIMERA_RF_FEATURES) { \
                reg_s.read(row, meta.slot * MAX_FEATURES + j); \
                if (meta.fresh == 1) { row = 0; } \
                meta.pqi = EL32(meta.phiq, j); \
                meta.pki = EL32(meta.phik, j); \
                meta.pko = EL32(meta.phik_out, j); \
                FOR16B(S_KEEP) \
                FOR16B(S_CELL) \
                row = CAT16(sn); \
                reg_s.write(meta.slot * MAX_FEATURES + j, row); \
                meta.zv = EL32(zrow, j); \
                if (meta.has_old == 1) { meta.zv = meta.zv - meta.pko; } \
                meta.zv = meta.zv + meta.pki; \
                meta.zn##j = (bit<32>)meta.zv; \
                meta.z = meta.z + ((int<64>)meta.pqi) * ((int<64>)meta.zv); \
            }
            FOR16(Z_KEEP)
            FOR16(S_ROW)
            zrow = CAT16(zn);
            reg_z.write(meta.slot, zrow);
            reg_ring.write(meta.ring_idx, meta.tok);
            meta.head = (meta.head + 1) & (CHIMERA_WINDOW - 1);
            meta.pkts = meta.npk;
            meta.last = meta.tsu;
            reg_sig.write(meta.slot, meta.sig);
            reg_pkts.write(meta.slot, meta.pkts);
            reg_last.write(meta.slot, meta.last);
            reg_orient.write(meta.slot, meta.orient);
            reg_head.write(meta.slot, meta.head);
            /* 5. attention, division-free: A_y = sum_e W_out[e][y] h_e; then the global layer */
#define ZERO_ACC(i) meta.a##i = 0; meta.s##i = 0;
            FOR16(ZERO_ACC)
            w_out.apply();
#define A_TERM(y, e) if (e < CHIMERA_D_V) { meta.a##y = meta.a##y + ((int<64>)EL32(meta.wo##e, y)) * meta.h##e; }
#define A_CLASS(y) if (y < CHIMERA_NUM_CLASSES) { FOR16BA(A_TERM, y) }
            FOR16(A_CLASS)
            if (meta.use_window == 0) {
                FOR16(ZERO_ACC)
                meta.z = 0;
            }
            global_layer.apply();
            if ((meta.vflags & CHIMERA_VFLAG_GLOBAL_HIT) != 0) { COVER(GLOBAL_HIT) } else { COVER(GLOBAL_MISS) }
            /* 6. rules */
            meta.dir8 = (bit<8>)meta.dir;
            meta.pkts8 = 255;
            if (meta.npk < 255) { meta.pkts8 = (bit<8>)meta.npk; }
            meta.hard_hit = 0;
            hard_rules.apply();
            if (meta.hard_hit == 1) { COVER(HARD_HIT) } else { COVER(HARD_MISS) }
            /* tables of absent rules are empty: a miss runs nop */
            FOR16(SOFT_HIT)
            if (soft_any == 1) { COVER(SOFT_FIRED) } else { COVER(SOFT_NONE) }
            /* 7. fusion: fused_y = ALPHA*A_y + BETA*S_y*Z + ((GAMMA*E_y*Z) >> EMA_FRAC), first argmax, margin */
            bit<63> e63;
            int<64> ee;
            int<64> u;
            int<64> step;
#define FUSE(i) \
            if (i < CHIMERA_NUM_CLASSES) { \
                reg_class_ema.read(e63, i); \
                meta.a##i = ((int<64>)(bit<64>)meta.alpha) * meta.a##i + ((int<64>)(bit<64>)meta.beta) * meta.s##i * meta.z \
                            + ((((int<64>)(bit<64>)meta.gamma) * S63(e63) * meta.z) >> CHIMERA_EMA_FRAC); \
            }
            FOR16(FUSE)
            int<64> best = meta.a0;
            meta.label = 0;
#define ARGMAX(i) if (i < CHIMERA_NUM_CLASSES && meta.a##i > best) { best = meta.a##i; meta.label = i; }
            FOR16(ARGMAX)
            int<64> second = 0;
            bit<1> have = 0;
#define SECOND(i) \
            if (i < CHIMERA_NUM_CLASSES && meta.label != i && (have == 0 || meta.a##i > second)) { \
                second = meta.a##i; have = 1; \
            }
            FOR16(SECOND)
            if (have == 0) { second = best; }
            bit<64> margin = (bit<64>)(best - second);
            if (meta.gamma != 0) { COVER(PRIOR) }
            if (have == 1 && best == second) { COVER(TIE) }
            if (margin > 64w0xFFFFFFFF) { COVER(MARGIN_CLAMP) }
            meta.score = 0xFFFFFFFF;
            if (margin <= 64w0xFFFFFFFF) { meta.score = (bit<32>)margin; }
            if (meta.hard_hit == 1 && meta.lambda_h == 1) {
                meta.label = meta.hard_label;
                meta.score = 0xFFFFFFFF;
                meta.vflags = meta.vflags | CHIMERA_VFLAG_HARD_VETO;
                COVER(VETO)
            } else if (meta.hard_hit == 1) {
                COVER(NO_VETO)
            }
            /* 8. two timescales: C_j += EMA_STEP((u_j << EMA_FRAC) - C_j) (centroids, then classes) */
#define EMA(j) \
            if (j < CHIMERA_NUM_CENTROIDS) { \
                reg_ema.read(e63, j); \
                ee = S63(e63); \
                u = 0; \
                if (meta.c == j) { u = (int<64>)1 << CHIMERA_EMA_FRAC; } \
                step = EMA_STEP(u - ee); \
                if (meta.c == j && step == 0 && ee != u) { COVER(EMA_STALL) } \
                ee = ee + step; \
                reg_ema.write(j, (bit<63>)(bit<64>)ee); \
            }
            FOR64(EMA)
#define CLASS_EMA(y) \
            if (y < CHIMERA_NUM_CLASSES) { \
                reg_class_ema.read(e63, y); \
                ee = S63(e63); \
                u = 0; \
                if (meta.label == y) { u = (int<64>)1 << CHIMERA_EMA_FRAC; } \
                ee = ee + EMA_STEP(u - ee); \
                reg_class_ema.write(y, (bit<63>)(bit<64>)ee); \
            }
            FOR16(CLASS_EMA)
            /* 9. token sample for the slow control loop */
            if ((n_parsed & ((64w1 << CHIMERA_SAMPLE_SHIFT) - 1)) == 0) {
                reg_counters.read(cnt, 4);
                COVER(SAMPLE)
                if (cnt >= CHIMERA_SAMPLE_SLOTS) { COVER(SAMPLE_WRAP) }
                reg_sample.write((bit<32>)(cnt & (CHIMERA_SAMPLE_SLOTS - 1)),
                                 ((bit<32>)meta.ip_len) << 16 | ((bit<32>)meta.iat_b) << 12 | ((bit<32>)meta.dir) << 11
                                 | ((bit<32>)meta.fclass) << 8 | ((bit<32>)meta.pclass) << 6);
                reg_counters.write(4, cnt + 1);
            }
        } else {
            COVER(UNPARSED)
            reg_counters.read(cnt, 3);
            reg_counters.write(3, cnt + 1);
        }
        /* 10. emit: the verdict header after Ethernet (frames too short for Ethernet go out unmarked) */
        if (hdr.ethernet.isValid()) {
            hdr.verdict.setValid();
            hdr.verdict.version = CHIMERA_VERDICT_VERSION;
            hdr.verdict.map_version = meta.map_version;
            hdr.verdict.reserved = 0;
            hdr.verdict.seq = meta.seq;
            hdr.verdict.ts_in = ((bit<64>)sm.ingress_global_timestamp) * 1000;
            hdr.verdict.ts_out = 0;
            hdr.verdict.orig_type = meta.orig_type;
            hdr.ethernet.etherType = CHIMERA_VERDICT_ETHERTYPE;
            if (meta.parsed == 1) {
                hdr.verdict.flags = meta.vflags | meta.clock_flag;
                hdr.verdict.label = meta.label;
                hdr.verdict.rule_id = 0xFF;
                if (meta.hard_hit == 1) { hdr.verdict.rule_id = meta.hard_rule; }
                hdr.verdict.score = meta.score;
                hdr.verdict.centroid = meta.c;
            } else {
                hdr.verdict.flags = CHIMERA_VFLAG_UNPARSED | meta.clock_flag;
                hdr.verdict.label = 0xFF;
                hdr.verdict.rule_id = 0xFF;
                hdr.verdict.score = 0;
                hdr.verdict.centroid = 0;
            }
        }
    }
}

/* ------------------------------------------------------------------ egress */

control ChimeraEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.verdict.isValid()) {
            hdr.verdict.ts_out = ((bit<64>)sm.egress_global_timestamp) * 1000;
        }
    }
}

control ChimeraComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }  /* L3/L4 bytes are forwarded unchanged: no checksum to update */
}

control ChimeraDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.shim);        /* invalid after ingress: never emitted (a frame too short for Ethernet has none) */
        pkt.emit(hdr.verdict);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(ChimeraParser(), ChimeraVerifyChecksum(), ChimeraIngress(), ChimeraEgress(), ChimeraComputeChecksum(),
         ChimeraDeparser()) main;
