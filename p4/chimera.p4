/* Chimera pipeline for BMv2 (v1model, p4c-bm2-ss).
 *
 * Integer semantics: docs/pipeline.md (chimera/reference/pipeline.py executes
 * them bit for bit); the eBPF C (chimera/targets/ebpf/chimera.bpf.c) implements the same. Sizes,
 * widths and coefficients come from the generated constants header, which the
 * eBPF program includes too. Tables and registers are declared at fixed
 * maximum sizes with explicit @id annotations, so p4/chimera.p4info.txtpb is
 * one control-plane contract for every compiled model; the header only turns
 * stages on and off (#if) and sets arithmetic constants.
 *
 * Tofino notes (where BMv2 allows what Tofino would not):
 *  - registers are read and written several times per packet (ring, EMA);
 *    Tofino allows one access per register array per pass: it would need one
 *    array per ring slot / centroid and RegisterActions.
 *  - the window sum, the fusion and the EMA loop are unrolled straight-line
 *    code with 64-bit multiplies; Tofino has no 64-bit multiply: ALPHA/BETA
 *    would be powers of two (shifts) and accumulators 32-bit.
 *  - the IAT bit length is an if-chain here; on Tofino, an lpm table.
 * Nothing divides; work per packet is bounded by the constants.
 */
#include <core.p4>
#include <v1model.p4>

#include "chimera_constants.h"

#define MAX_CLASSES 16
#define MAX_WINDOW 16
#define MAX_SOFT 16
#define MAX_CENTROIDS 64
#define MAX_FLOW_SLOTS 65536
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
#if CHIMERA_AGG_INCREMENTAL
#error "chimera.p4 implements batch aggregation only"
#endif

#define FOR16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
/* (index, hex digit) pairs, so @id annotations get literal ids by token pasting */
#define FOR16H(M) M(0, 0) M(1, 1) M(2, 2) M(3, 3) M(4, 4) M(5, 5) M(6, 6) M(7, 7) M(8, 8) M(9, 9) M(10, a) \
    M(11, b) M(12, c) M(13, d) M(14, e) M(15, f)
#define FOR64(M) FOR16(M) M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) \
    M(29) M(30) M(31) M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) M(40) M(41) M(42) M(43) M(44) M(45) \
    M(46) M(47) M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)

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
    verdict_t      verdict;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    tcp_t          tcp;
    udp_t          udp;
}

#define ACC_FIELDS(i) int<64> a##i; int<64> s##i;
#define RING_FIELDS(i) bit<8> w##i;

struct meta_t {
    bit<1>  parsed;
    bit<1>  ver;
    bit<1>  use_window;
    bit<1>  lambda_h;
    bit<32> alpha;
    bit<32> beta;
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
    bit<32> last;
    bit<1>  orient;
    bit<8>  head;
    bit<8>  vflags;
    bit<64> ts_ns;
    bit<32> tsu;
    bit<32> units;
    bit<8>  bitlen;
    bit<8>  iat_b;
    bit<1>  dir;
    bit<8>  dir8;
    bit<8>  pkts8;
    bit<8>  lbin;
    bit<8>  fclass;
    bit<8>  pclass;
    bit<16> mkey;
    bit<8>  c;
    bit<16> nv;
    int<64> z;
    bit<1>  hard_hit;
    bit<8>  hard_rule;
    bit<8>  hard_label;
    bit<8>  label;
    bit<32> score;
    FOR16(ACC_FIELDS)
    FOR16(RING_FIELDS)
}

/* ------------------------------------------------------------------ parser */

parser ChimeraParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
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

control ChimeraIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @id(0x16000002) register<bit<32>>(MAX_FLOW_SLOTS) reg_sig;
    @id(0x16000003) register<bit<32>>(MAX_FLOW_SLOTS) reg_last;
    @id(0x16000004) register<bit<16>>(MAX_FLOW_SLOTS) reg_pkts;
    @id(0x16000005) register<bit<1>>(MAX_FLOW_SLOTS) reg_orient;
    @id(0x16000006) register<bit<8>>(MAX_FLOW_SLOTS) reg_head;
    @id(0x16000007) register<bit<8>>(1048576) reg_ring;          /* MAX_FLOW_SLOTS * MAX_WINDOW */
    @id(0x16000008) register<bit<64>>(MAX_CENTROIDS) reg_ema;    /* two's complement int<64> */
    @id(0x16000009) register<bit<64>>(8) reg_counters;           /* evictions, new flows, parsed, unparsed */

    @id(0x01000001) action nop() { }
    @id(0x0100000B) action set_active(bit<1> ver) { meta.ver = ver; }
    @id(0x01000002) action set_egress(bit<9> port) { sm.egress_spec = port; }
    @id(0x01000003) action set_params(bit<32> alpha, bit<32> beta, bit<1> lambda_h, bit<16> map_version,
                                      bit<1> use_window) {
        meta.alpha = alpha;
        meta.beta = beta;
        meta.lambda_h = lambda_h;
        meta.map_version = map_version;
        meta.use_window = use_window;
    }
    @id(0x01000004) action set_len_bin(bit<8> bin) { meta.lbin = bin; }
    @id(0x01000005) action set_flag_class(bit<8> cls) { meta.fclass = cls; }
    @id(0x01000006) action set_centroid(bit<8> centroid) { meta.c = centroid; }

#define ADD_CLASS(i) meta.a##i = meta.a##i + (int<64>)(int<32>)p[32 * i + 31 : 32 * i];
    /* one window slot: Z += K[c, c_i]; A_y += P[c, c_i, y] (p packs 16 signed 32-bit values) */
    @id(0x01000007) action win_add(bit<32> k, bit<512> p) {
        meta.z = meta.z + (int<64>)(bit<64>)k;
        FOR16(ADD_CLASS)
    }
    /* global layer: Z += Gz; A_y += G[y] */
    @id(0x01000008) action glob_add(bit<32> gz, bit<512> p) {
        meta.z = meta.z + (int<64>)(bit<64>)gz;
        meta.vflags = meta.vflags | CHIMERA_VFLAG_GLOBAL_HIT;
        FOR16(ADD_CLASS)
    }
    @id(0x01000009) action hard_hit(bit<8> rule, bit<8> label) {
        meta.hard_hit = 1;
        meta.hard_rule = rule;
        meta.hard_label = label;
    }
#define ADD_SOFT(i) meta.s##i = meta.s##i + (int<64>)(int<32>)w[32 * i + 31 : 32 * i];
    /* a soft rule fired: S_y += W[r, y] (each soft table holds one rule's entries) */
    @id(0x0100000A) action soft_add(bit<512> w) {
        FOR16(ADD_SOFT)
    }

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
#define WIN_TABLE(i, h) \
    @id(0x0201000##h) table window_##i { \
        key = { meta.ver: exact @name("ver"); meta.c: exact @name("centroid"); \
                meta.w##i: exact @name("key_centroid"); } \
        actions = { win_add; nop; } \
        default_action = nop(); \
        size = 8192; \
    }
    FOR16H(WIN_TABLE)
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
        bit<32> zero32 = 0;
        port_map.apply();
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
            reg_counters.read(cnt, 2);
            reg_counters.write(2, cnt + 1);
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
                reg_counters.read(cnt, 0);
                reg_counters.write(0, cnt + 1);
                meta.pkts = 0;
            }
            /* 2. tokenize: BMv2 timestamps are microseconds; the flow clock is ns >> IAT_SHIFT */
            meta.ts_ns = ((bit<64>)sm.ingress_global_timestamp) * 1000;
            meta.tsu = (bit<32>)(meta.ts_ns >> CHIMERA_IAT_SHIFT);
            if (meta.pkts == 0) {
                meta.vflags = meta.vflags | CHIMERA_VFLAG_NEW_FLOW;
                reg_counters.read(cnt, 1);
                reg_counters.write(1, cnt + 1);
                meta.sig = meta.crc;
                meta.orient = meta.swap;
                meta.head = 0;
                meta.iat_b = 0;
            } else {
                meta.units = meta.tsu - meta.last;
                meta.bitlen = 0;
                if (meta.units >= 32w0x10000) { meta.bitlen = meta.bitlen + 16; meta.units = meta.units >> 16; }
                if (meta.units >= 32w0x100) { meta.bitlen = meta.bitlen + 8; meta.units = meta.units >> 8; }
                if (meta.units >= 32w0x10) { meta.bitlen = meta.bitlen + 4; meta.units = meta.units >> 4; }
                if (meta.units >= 32w0x4) { meta.bitlen = meta.bitlen + 2; meta.units = meta.units >> 2; }
                if (meta.units >= 32w0x2) { meta.bitlen = meta.bitlen + 1; meta.units = meta.units >> 1; }
                if (meta.units > 0) { meta.bitlen = meta.bitlen + 1; }
                if (meta.bitlen > CHIMERA_IAT_BUCKETS - 2) { meta.bitlen = CHIMERA_IAT_BUCKETS - 2; }
                meta.iat_b = 1 + meta.bitlen;
            }
            meta.dir = meta.swap ^ meta.orient;
            /* 3. map: length range table, flag ternary table, protocol class -> exact key -> centroid */
            meta.lbin = 0;
            meta.fclass = 0;
            meta.c = 0;
            len_range.apply();
            flag_ternary.apply();
            meta.pclass = 0;
            if (meta.proto == 6) { meta.pclass = 1; } else if (meta.proto == 17) { meta.pclass = 2; }
            else if (meta.proto == 1) { meta.pclass = 3; }
            meta.mkey = (((((bit<16>)meta.lbin * CHIMERA_IAT_BUCKETS + (bit<16>)meta.iat_b) * 2 + (bit<16>)meta.dir)
                         * CHIMERA_FLAG_CLASSES + (bit<16>)meta.fclass) * CHIMERA_PROTO_CLASSES) + (bit<16>)meta.pclass;
            map_exact.apply();
            /* 4. window ring (write, then read the whole window back) */
            reg_ring.write(meta.slot * CHIMERA_WINDOW + (bit<32>)(meta.head & (CHIMERA_WINDOW - 1)), meta.c);
            meta.head = (meta.head + 1) & (CHIMERA_WINDOW - 1);
            if (meta.pkts < 0xFFFF) { meta.pkts = meta.pkts + 1; }
            meta.last = meta.tsu;
            reg_sig.write(meta.slot, meta.sig);
            reg_pkts.write(meta.slot, meta.pkts);
            reg_last.write(meta.slot, meta.last);
            reg_orient.write(meta.slot, meta.orient);
            reg_head.write(meta.slot, meta.head);
            meta.nv = meta.pkts;
            if (meta.nv > CHIMERA_WINDOW) { meta.nv = CHIMERA_WINDOW; }
            /* 5. division-free attention: one window table per ring slot, then the global layer */
            meta.z = 0;
#define ZERO_ACC(i) meta.a##i = 0; meta.s##i = 0;
            FOR16(ZERO_ACC)
/* gated on runtime values only (nv <= WINDOW), so p4c keeps every table and the P4Info stays one contract */
#define WIN_APPLY(i) \
            if (i < meta.nv && meta.use_window == 1) { \
                reg_ring.read(meta.w##i, meta.slot * CHIMERA_WINDOW + i); \
                window_##i.apply(); \
            }
            FOR16(WIN_APPLY)
            global_layer.apply();
            /* 6. rules */
            meta.dir8 = (bit<8>)meta.dir;
            meta.pkts8 = 255;
            if (meta.pkts < 255) { meta.pkts8 = (bit<8>)meta.pkts; }
            meta.hard_hit = 0;
            hard_rules.apply();
#define SOFT_APPLY(i) soft_##i.apply();  /* tables of absent rules are empty: a miss runs nop */
            FOR16(SOFT_APPLY)
            /* 7. fusion: fused_y = ALPHA*A_y + BETA*S_y*Z, first argmax, margin to the second */
#define FUSE(i) meta.a##i = ((int<64>)(bit<64>)meta.alpha) * meta.a##i + ((int<64>)(bit<64>)meta.beta) * meta.s##i * meta.z;
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
            meta.score = 0xFFFFFFFF;
            if (margin <= 64w0xFFFFFFFF) { meta.score = (bit<32>)margin; }
            if (meta.hard_hit == 1 && meta.lambda_h == 1) {
                meta.label = meta.hard_label;
                meta.score = 0xFFFFFFFF;
                meta.vflags = meta.vflags | CHIMERA_VFLAG_HARD_VETO;
            }
            /* 8. two-timescale statistics: C_j += ((u_j << EMA_FRAC) - C_j) >> EMA_SHIFT */
            bit<64> e;
            int<64> ee;
            int<64> u;
#define EMA(j) \
            if (j < CHIMERA_NUM_CENTROIDS) { \
                reg_ema.read(e, j); \
                ee = (int<64>)e; \
                u = 0; \
                if (meta.c == j) { u = (int<64>)1 << CHIMERA_EMA_FRAC; } \
                ee = ee + ((u - ee) >> CHIMERA_EMA_SHIFT); \
                reg_ema.write(j, (bit<64>)ee); \
            }
            FOR64(EMA)
        } else {
            reg_counters.read(cnt, 3);
            reg_counters.write(3, cnt + 1);
        }
        /* 9. emit: the verdict header after Ethernet (frames too short for Ethernet go out unmarked) */
        if (hdr.ethernet.isValid()) {
            hdr.verdict.setValid();
            hdr.verdict.version = 1;
            hdr.verdict.map_version = meta.map_version;
            hdr.verdict.reserved = 0;
            hdr.verdict.ts_in = ((bit<64>)sm.ingress_global_timestamp) * 1000;
            hdr.verdict.ts_out = 0;
            hdr.verdict.orig_type = hdr.ethernet.etherType;
            hdr.ethernet.etherType = CHIMERA_VERDICT_ETHERTYPE;
            if (meta.parsed == 1) {
                hdr.verdict.flags = meta.vflags;
                hdr.verdict.label = meta.label;
                hdr.verdict.rule_id = 0xFF;
                if (meta.hard_hit == 1) { hdr.verdict.rule_id = meta.hard_rule; }
                hdr.verdict.score = meta.score;
                hdr.verdict.centroid = meta.c;
            } else {
                hdr.verdict.flags = CHIMERA_VFLAG_UNPARSED;
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
        pkt.emit(hdr.verdict);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

V1Switch(ChimeraParser(), ChimeraVerifyChecksum(), ChimeraIngress(), ChimeraEgress(), ChimeraComputeChecksum(),
         ChimeraDeparser()) main;
