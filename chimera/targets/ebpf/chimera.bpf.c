// SPDX-License-Identifier: GPL-2.0
/* Chimera pipeline as a tc (clsact ingress) eBPF program.
 *
 * Integer semantics: docs/pipeline.md (chimera/reference/pipeline.py executes
 * them bit for bit); constants come from the generated header shared with
 * p4/chimera.p4. Narrow-key range/ternary/exact tables (length bins, TCP-flag
 * classes, port ids, the global layer keyed on (centroid, protocol class)) are
 * installed pre-resolved as dense arrays: the loader computes the same first
 * match a TCAM would return. Hard/soft rules keep a true ternary linear scan.
 * Attention is incremental: per-flow S[m][d_v] and Z[m] accumulators updated by
 * the token entering and the one leaving the window, so the work per packet does
 * not grow with the window. Every model table has two versions; one write to
 * `active` flips them.
 *
 * Clock (docs/pipeline.md, "Clocks"): a frame carrying the trace-time shim
 * (chimera/formats/shim.py) is classified on the shim's trace_ns and its index
 * goes into the verdict's seq; the shim is replaced by the verdict header, so
 * the frame leaves as it was captured plus the verdict. A frame without a shim
 * is classified on the switch's own clock (bpf_ktime_get_ns).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

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

/* Loops over the m x d_v accumulators: unrolled while they are small; kept as (bounded) loops when m x d_v is
 * large, where full unrolling spills registers past the 512-byte stack (found by the fuzzer's max profile:
 * m = d_v = 16). */
#if CHIMERA_RF_FEATURES * CHIMERA_D_V > 64
#define UNROLL_OUTER _Pragma("clang loop unroll(disable)")
#else
#define UNROLL_OUTER _Pragma("unroll")
#endif

#ifndef barrier_var
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

#define NV 2
#define MAX1(x) ((x) > 0 ? (x) : 1)
#define Y CHIMERA_NUM_CLASSES
#define C CHIMERA_NUM_CENTROIDS
#define L CHIMERA_WINDOW
#define M CHIMERA_RF_FEATURES
#define DV CHIMERA_D_V
#define NPC CHIMERA_PROTO_CLASSES
#define HMAX MAX1(CHIMERA_HARD_ENTRIES)
#define SMAX MAX1(CHIMERA_SOFT_ENTRIES)
#define RMAX MAX1(CHIMERA_SOFT_RULES)
/* value rows of the five sub-tokens, one table: sub-token j's rows start at OFF_j */
#define OFF_LEN 0
#define OFF_IAT (OFF_LEN + CHIMERA_SUB_LEN)
#define OFF_FLAGS (OFF_IAT + CHIMERA_SUB_IAT)
#define OFF_PORT (OFF_FLAGS + CHIMERA_SUB_FLAGS)
#define OFF_INDEX (OFF_PORT + CHIMERA_SUB_PORT)
#define VROWS (OFF_INDEX + CHIMERA_SUB_INDEX)

#if Y > 16
#error "the eBPF target supports at most 16 classes"
#endif
#if CHIMERA_SOFT_RULES > 32
#error "the eBPF target supports at most 32 soft rules (fired-rule bitmask)"
#endif
#if M > 16 || DV > 16
#error "the eBPF target supports at most 16 random features and 16 value dimensions"
#endif
#if !CHIMERA_AGG_INCREMENTAL
#error "the eBPF target runs the incremental attention form only (batch is the reference's cross-check)"
#endif

struct flow_slot {
	__u32 sig;
	__u32 last;
	__u16 pkts;
	__u8 orient;
	__u8 head;
	__u32 pad;
	__u64 ring[L];
	__s32 S[M][DV];
	__s32 Z[M];
};

struct val_row {
	__s32 v[DV];
};

struct phi_row {
	__u32 q[M];
	__u32 k[M];
};

struct wout {
	__s32 w[DV][Y];
};

struct glob_entry {
	__u32 hit;
	__u32 pad;
	__s64 gz;
	__s64 g[Y];
};

/* Rule key packed as lo = proto | flags << 8 | dir << 16 | flow_pkts << 24 | sport << 32 | dport << 48,
 * hi = ip_len: a ternary compare is two mask-xor operations. */
struct rule_entry {
	__u64 value_lo;
	__u64 mask_lo;
	__u16 value_hi;
	__u16 mask_hi;
	__u8 rule;
	__u8 label;
	__u8 pad[2];
};

struct rule_key {
	__u64 lo;
	__u16 hi;
};

/* One map value per version for the soft rules and their weights: one lookup per packet. */
struct soft_block {
	struct rule_entry e[SMAX];
};

struct soft_weights {
	__s32 w[RMAX][Y];
};

struct params {
	__u32 alpha;
	__u32 beta;
	__u32 gamma;
	__u32 lambda_h;
	__u32 map_version;
	__u32 n_hard;
	__u32 n_soft;
	__u32 use_window;
	/* soft entries are laid out [TCP-only][any protocol][UDP-only][other]: the range a packet
	 * must scan, per protocol (0 TCP, 1 UDP, 2 other); entries outside it cannot match */
	__u32 soft_lo[3];
	__u32 soft_hi[3];
};

struct ema_regs {
	__s64 v[C];
};

struct class_ema_regs {
	__s64 v[Y];
};

/* fields from chimera/formats/verdict.py, via the generated header (network byte order on the wire) */
struct verdict_hdr {
	CHIMERA_VERDICT_FIELDS_C
} __attribute__((packed));

_Static_assert(sizeof(struct verdict_hdr) == CHIMERA_VERDICT_LEN, "verdict header size");

/* fields from chimera/formats/shim.py, via the generated header */
struct shim_hdr {
	CHIMERA_SHIM_FIELDS_C
} __attribute__((packed));

_Static_assert(sizeof(struct shim_hdr) == CHIMERA_SHIM_LEN, "shim header size");
_Static_assert(CHIMERA_VERDICT_LEN > CHIMERA_SHIM_LEN, "the verdict header replaces the shim in place");

/* per-CPU scratch for the vectors (the stack holds 512 bytes) */
struct scratch {
	__s64 A[Y];
	__s64 h[DV];
	__s32 v[DV];
	__s32 S[Y];
	__u32 label;
};

enum counter {
	CNT_EVICTIONS = 0,
	CNT_NEW_FLOWS,
	CNT_PARSED,
	CNT_UNPARSED,
	CNT_HEADROOM_FAIL,
	CNT_REDIRECTED,
	CNT_SAMPLES,
	CNT_MAX = 8,
};

/* Tables and registers are mmapable arrays: the loader writes a table version and reads the registers
 * through a memory mapping (one memcpy, not one syscall per entry); `active` is flipped by one map update. */
#define ARRAY(name, vtype, n, mflags)                                                                          \
	struct {                                                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                              \
		__uint(max_entries, (n));                                                                      \
		__uint(map_flags, (mflags));                                                                   \
		__type(key, __u32);                                                                            \
		__type(value, vtype);                                                                          \
	} name SEC(".maps")
#define MMAP BPF_F_MMAPABLE

ARRAY(len_tbl, __u8, NV * 65536, MMAP);
ARRAY(fine_tbl, __u8, NV * 65536, MMAP);
ARRAY(flag_tbl, __u8, NV * 256, MMAP);
ARRAY(map_tbl, __u8, NV * CHIMERA_MAP_KEYS, MMAP);
ARRAY(port_tbl, __u8, NV * 65536, MMAP);
ARRAY(val_tbl, struct val_row, NV * VROWS, MMAP);
ARRAY(phi_tbl, struct phi_row, NV * C, MMAP);
ARRAY(wout_tbl, struct wout, NV, MMAP);
ARRAY(glob_tbl, struct glob_entry, NV * C * NPC, MMAP);
ARRAY(hard_tbl, struct rule_entry, NV * HMAX, MMAP);
ARRAY(soft_tbl, struct soft_block, NV, MMAP);
ARRAY(softw_tbl, struct soft_weights, NV, MMAP);
ARRAY(params_tbl, struct params, NV, MMAP);
ARRAY(active, __u32, 1, 0);
ARRAY(flows, struct flow_slot, CHIMERA_FLOW_SLOTS, 0);
ARRAY(ema, struct ema_regs, 1, MMAP);
ARRAY(class_ema, struct class_ema_regs, 1, MMAP);
ARRAY(sample, __u32, CHIMERA_SAMPLE_SLOTS, MMAP);
ARRAY(counters, __u64, CNT_MAX, MMAP);
ARRAY(clock, __u64, 1, MMAP); /* the last `now` a classified packet used: the control plane's clock */
/* decision-point coverage (chimera/formats/coverage.py): counted only in -DCHIMERA_COVERAGE builds */
ARRAY(coverage, __u64, CHIMERA_COV_POINTS, MMAP);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

#include "ports.bpf.h"

static __always_inline __u64 count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	return c ? __sync_fetch_and_add(c, 1) : 0;
}

#ifdef CHIMERA_COVERAGE
static __always_inline void cover(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&coverage, &which);
	if (c)
		__sync_fetch_and_add(c, 1);
}
#define COVER(point) cover(CHIMERA_COV_##point)
#else
#define COVER(point) do { } while (0)
#endif

static __always_inline __u32 bit_length32(__u32 x)
{
	__u32 n = 0;
	if (x >= (1u << 16)) { n += 16; x >>= 16; }
	if (x >= (1u << 8)) { n += 8; x >>= 8; }
	if (x >= (1u << 4)) { n += 4; x >>= 4; }
	if (x >= (1u << 2)) { n += 2; x >>= 2; }
	if (x >= (1u << 1)) { n += 1; x >>= 1; }
	return n + (x > 0);
}

/* CRC-32 (IEEE, reflected; zlib.crc32), table-driven: 13 branch-free lookups per packet. */
static const __u32 crc_table[256] = {
	0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f,
	0xe963a535, 0x9e6495a3, 0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988,
	0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91, 0x1db71064, 0x6ab020f2,
	0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
	0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9,
	0xfa0f3d63, 0x8d080df5, 0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172,
	0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b, 0x35b5a8fa, 0x42b2986c,
	0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
	0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423,
	0xcfba9599, 0xb8bda50f, 0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924,
	0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d, 0x76dc4190, 0x01db7106,
	0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
	0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d,
	0x91646c97, 0xe6635c01, 0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e,
	0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457, 0x65b0d9c6, 0x12b7e950,
	0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
	0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7,
	0xa4d1c46d, 0xd3d6f4fb, 0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0,
	0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9, 0x5005713c, 0x270241aa,
	0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
	0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81,
	0xb7bd5c3b, 0xc0ba6cad, 0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a,
	0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683, 0xe3630b12, 0x94643b84,
	0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
	0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb,
	0x196c3671, 0x6e6b06e7, 0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc,
	0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5, 0xd6d6a3e8, 0xa1d1937e,
	0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
	0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55,
	0x316e8eef, 0x4669be79, 0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236,
	0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f, 0xc5ba3bbe, 0xb2bd0b28,
	0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
	0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f,
	0x72076785, 0x05005713, 0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38,
	0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21, 0x86d3d2d4, 0xf1d4e242,
	0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
	0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69,
	0x616bffd3, 0x166ccf45, 0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2,
	0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db, 0xaed16a4a, 0xd9d65adc,
	0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
	0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693,
	0x54de5729, 0x23d967bf, 0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94,
	0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d
};

static __always_inline __u32 crc32_13(const __u8 *b)
{
	__u32 crc = 0xFFFFFFFF;
#pragma unroll
	for (int i = 0; i < 13; i++) {
		__u32 idx = crc ^ b[i];
		/* the mask after the barrier: clang may otherwise fold it into the byte's own bound, which kernel
		 * 6.1's verifier cannot see (it rejected the table access as unbounded; 6.18's accepted it) */
		barrier_var(idx);
		crc = crc_table[idx & 0xFF] ^ (crc >> 8);
	}
	return ~crc;
}

/* (key & mask) == value on all fields, branch-free */
static __always_inline int ternary(const struct rule_key *k, const struct rule_entry *e)
{
	return (((k->lo & e->mask_lo) ^ e->value_lo) | ((k->hi & e->mask_hi) ^ e->value_hi)) == 0;
}

/* v(tok) = the five value rows of the token's sub-tokens, summed (SumReduce); 0 on a missing row */
static __always_inline int token_value(__u32 ver, __u64 tok, __s32 *v)
{
	__u32 idx[5] = {OFF_LEN + ((tok >> 8) & 0xFFFF), OFF_IAT + ((tok >> 24) & 0xFF),
			OFF_FLAGS + ((tok >> 32) & 0xFF), OFF_PORT + ((tok >> 40) & 0xFF),
			OFF_INDEX + ((tok >> 48) & 0xFF)};
#pragma unroll
	for (int e = 0; e < DV; e++)
		v[e] = 0;
#pragma unroll
	for (int t = 0; t < 5; t++) {
		__u32 k = ver * VROWS + idx[t];
		struct val_row *r = bpf_map_lookup_elem(&val_tbl, &k);
		if (!r)
			return -1;
#pragma unroll
		for (int e = 0; e < DV; e++)
			v[e] += r->v[e];
	}
	return 0;
}

struct pkt {
	__u32 src, dst;       /* host order */
	__u16 sport, dport;
	__u16 ip_len;
	__u8 proto, flags;
};

/* Copy len bytes at off: directly from the linear area when it holds them, else through the helper. */
static __always_inline int load(struct __sk_buff *skb, __u32 off, void *to, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	off &= 0x7F; /* every offset we read is < 128: bounded for the verifier */
	if (len == 14 && data + off + 14 <= end) {
		__builtin_memcpy(to, data + off, 14);
		return 0;
	}
	if (len == 20 && data + off + 20 <= end) {
		__builtin_memcpy(to, data + off, 20);
		return 0;
	}
	if (len == 4 && data + off + 4 <= end) {
		__builtin_memcpy(to, data + off, 4);
		return 0;
	}
	if (len == 12 && data + off + 12 <= end) {
		__builtin_memcpy(to, data + off, 12);
		return 0;
	}
	if (len == 16 && data + off + 16 <= end) {
		__builtin_memcpy(to, data + off, 16);
		return 0;
	}
	return bpf_skb_load_bytes(skb, off, to, len);
}

/* The trace-time shim, when the frame carries one: its fields (host order). */
struct clock_in {
	int shim;      /* 1: the frame carried the shim */
	__u32 index;
	__u64 trace_ns;
};

/* Step 0: the parser. Returns 1 for classifiable IPv4 packets; *eth_type is the frame's own EtherType
 * (under a shim, the shim's orig_type) and *ck the shim, if any (read whether or not the packet parses). */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p, __u16 *eth_type, struct clock_in *ck)
{
	__u8 eth[14];
	__u8 ip[20];
	__u32 len = skb->len;
	__u32 l3 = 14;
	if (len < 14 || load(skb, 0, eth, 14))
		return 0;
	*eth_type = ((__u16)eth[12] << 8) | eth[13];
	if (*eth_type == CHIMERA_SHIM_ETHERTYPE) {
		struct shim_hdr sh;
		if (len < 14 + CHIMERA_SHIM_LEN || load(skb, 14, &sh, CHIMERA_SHIM_LEN))
			return 0;
		ck->shim = 1;
		ck->index = bpf_ntohl(sh.index);
		ck->trace_ns = bpf_be64_to_cpu(sh.trace_ns);
		*eth_type = bpf_ntohs(sh.orig_type);
		l3 = 14 + CHIMERA_SHIM_LEN;
	}
	if (*eth_type != 0x0800)
		return 0;
	if (len < l3 + 20 || load(skb, l3, ip, 20))
		return 0;
	__u32 ihl = (ip[0] & 0x0F) * 4;
	if ((ip[0] >> 4) != 4 || ihl < 20)
		return 0;
	if (len - l3 < ihl)
		return 0;
	p->ip_len = ((__u16)ip[2] << 8) | ip[3];
	if (p->ip_len < ihl)
		return 0;
	if ((((__u16)ip[6] << 8) | ip[7]) & 0x3FFF) /* MF or fragment offset */
		return 0;
	p->proto = ip[9];
	p->src = ((__u32)ip[12] << 24) | ((__u32)ip[13] << 16) | ((__u32)ip[14] << 8) | ip[15];
	p->dst = ((__u32)ip[16] << 24) | ((__u32)ip[17] << 16) | ((__u32)ip[18] << 8) | ip[19];
	p->sport = p->dport = 0;
	p->flags = 0;
	__u32 l4 = l3 + ihl;
	if (p->proto == 6 || p->proto == 17) {
		__u8 h[14];
		__u32 need = p->proto == 6 ? 20 : 8;
		if (len - l4 < need)
			return 0;
		if (load(skb, l4, h, p->proto == 6 ? 14 : 4))
			return 0;
		p->sport = ((__u16)h[0] << 8) | h[1];
		p->dport = ((__u16)h[2] << 8) | h[3];
		if (p->proto == 6)
			p->flags = h[13];
	}
	return 1;
}

/* Steps 1-9 for one parsed packet; fills the verdict fields. */
static __always_inline void classify(struct pkt *p, __u64 now, __u64 n_parsed, struct verdict_hdr *v)
{
	__u32 zero = 0;
	__u32 *act = bpf_map_lookup_elem(&active, &zero);
	__u32 ver = act ? (*act & 1) : 0;
	struct params *pr = bpf_map_lookup_elem(&params_tbl, &ver);
	struct scratch *sc = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!pr || !sc)
		return;
	v->map_version = bpf_htons((__u16)pr->map_version);

	/* 1. flow slot */
	int swap = p->src > p->dst || (p->src == p->dst && p->sport > p->dport);
	__u32 lo_ip = swap ? p->dst : p->src, hi_ip = swap ? p->src : p->dst;
	__u16 lo_p = swap ? p->dport : p->sport, hi_p = swap ? p->sport : p->dport;
	__u8 tup[13] = {lo_ip >> 24, lo_ip >> 16, lo_ip >> 8, lo_ip, hi_ip >> 24, hi_ip >> 16, hi_ip >> 8, hi_ip,
			lo_p >> 8, lo_p, hi_p >> 8, hi_p, p->proto};
	__u32 crc = crc32_13(tup);
	__u32 slot = crc & (CHIMERA_FLOW_SLOTS - 1);
	struct flow_slot *fs = bpf_map_lookup_elem(&flows, &slot);
	if (!fs)
		return;
	__u8 flags = 0;
	if (fs->pkts > 0 && fs->sig != crc) {
		flags |= CHIMERA_VFLAG_EVICTED;
		count(CNT_EVICTIONS);
		COVER(EVICT);
		fs->pkts = 0;
	}
	/* 2. tokenize */
	__u32 tsu = (__u32)(now >> CHIMERA_IAT_SHIFT);
	__u32 iat_b = 0;
	if (fs->pkts == 0) {
		flags |= CHIMERA_VFLAG_NEW_FLOW;
		count(CNT_NEW_FLOWS);
		COVER(NEW_FLOW);
		fs->sig = crc;
		fs->orient = swap;
		fs->head = 0;
UNROLL_OUTER
		for (int j = 0; j < M; j++) {
			asm volatile("" ::: "memory"); /* one row at a time: never one memset of the whole block */
			fs->Z[j] = 0;
#pragma unroll
			for (int e = 0; e < DV; e++)
				fs->S[j][e] = 0;
		}
	} else {
		COVER(SAME_FLOW);
		if (tsu < fs->last)
			COVER(CLOCK_WRAP);
		__u32 bl = bit_length32(tsu - fs->last);
		iat_b = 1 + (bl < CHIMERA_IAT_BUCKETS - 2 ? bl : CHIMERA_IAT_BUCKETS - 2);
		if (iat_b == CHIMERA_IAT_BUCKETS - 1)
			COVER(IAT_TOP);
	}
	__u32 dir = swap ^ fs->orient;
	if (dir)
		COVER(REVERSE_DIR);
	if (fs->pkts == 0xFFFF)
		COVER(PKTS_SATURATED);
	__u32 npk = fs->pkts < 0xFFFF ? fs->pkts + 1 : 0xFFFF;
	/* 3. partition and map */
	__u32 k = ver * 65536 + p->ip_len;
	__u8 *lb = bpf_map_lookup_elem(&len_tbl, &k);
	__u8 *fb = bpf_map_lookup_elem(&fine_tbl, &k);
	k = ver * 256 + p->flags;
	__u8 *fc = bpf_map_lookup_elem(&flag_tbl, &k);
	k = ver * 65536 + p->sport;
	__u8 *sid = bpf_map_lookup_elem(&port_tbl, &k);
	k = ver * 65536 + p->dport;
	__u8 *did = bpf_map_lookup_elem(&port_tbl, &k);
	if (!lb || !fb || !fc || !sid || !did)
		return;
	/* the port id: the higher-ranked (smaller, non-zero) id of the two ports */
	__u32 pid = (*sid == 0 || (*did != 0 && *did < *sid)) ? *did : *sid;
	__u32 pc = p->proto == 6 ? 1 : p->proto == 17 ? 2 : p->proto == 1 ? 3 : 0;
#ifdef CHIMERA_COVERAGE
	cover(pc == 1 ? CHIMERA_COV_PROTO_TCP : pc == 2 ? CHIMERA_COV_PROTO_UDP : pc == 3 ? CHIMERA_COV_PROTO_ICMP
							   : CHIMERA_COV_PROTO_OTHER);
	if (*sid && *did)
		cover(CHIMERA_COV_PORT_BOTH);
	cover(pid ? CHIMERA_COV_PORT_HIT : CHIMERA_COV_PORT_MISS);
#endif
	__u32 key = ((((__u32)*lb * CHIMERA_IAT_BUCKETS + iat_b) * 2 + dir) * CHIMERA_FLAG_CLASSES + *fc) * NPC + pc;
	k = ver * CHIMERA_MAP_KEYS + key;
	__u8 *cp = bpf_map_lookup_elem(&map_tbl, &k);
	if (!cp)
		return;
	__u32 c = *cp % C;
	__u64 tok = (__u64)c | (__u64)(*fb * 2 + dir) << 8 | (__u64)(iat_b * 2 + dir) << 24 |
		    (__u64)(*fc * NPC + pc) << 32 | (__u64)(pid * 2 + dir) << 40 |
		    (__u64)(bit_length32(npk) < 15 ? bit_length32(npk) : 15) << 48;
	/* 4. window: the leaving token out, the new one in (S, Z accumulators) */
	__u32 h = fs->head & (L - 1);
	k = ver * C + c;
	struct phi_row *ph = bpf_map_lookup_elem(&phi_tbl, &k);
	if (!ph)
		return;
	if (fs->pkts >= L) {
		COVER(WINDOW_FULL);
		__u64 old = fs->ring[h];
		__u32 ko = ver * C + ((old & 0xFF) % C);
		struct phi_row *po = bpf_map_lookup_elem(&phi_tbl, &ko);
		if (!po || token_value(ver, old, sc->v))
			return;
UNROLL_OUTER
		for (int j = 0; j < M; j++) {
			__s32 pk = po->k[j];
			fs->Z[j] -= pk;
#pragma unroll
			for (int e = 0; e < DV; e++)
				fs->S[j][e] -= pk * sc->v[e];
		}
	}
	if (token_value(ver, tok, sc->v))
		return;
UNROLL_OUTER
	for (int j = 0; j < M; j++) {
		__s32 pk = ph->k[j];
		fs->Z[j] += pk;
#pragma unroll
		for (int e = 0; e < DV; e++)
			fs->S[j][e] += pk * sc->v[e];
	}
	fs->ring[h] = tok;
	fs->head = (h + 1) & (L - 1);
	fs->pkts = npk;
	fs->last = tsu;
	/* 5. attention, division-free: h = phi_q S, A = W_out^T h, Z = phi_q Zacc; then the global layer */
	__s64 Z = 0;
#pragma unroll
	for (int y = 0; y < Y; y++)
		sc->A[y] = 0;
	if (pr->use_window) {
		struct wout *wo = bpf_map_lookup_elem(&wout_tbl, &ver);
		if (!wo)
			return;
UNROLL_OUTER
		for (int e = 0; e < DV; e++) {
			__s64 acc = 0;
#pragma unroll
			for (int j = 0; j < M; j++)
				acc += (__s64)ph->q[j] * fs->S[j][e];
			sc->h[e] = acc;
		}
UNROLL_OUTER
		for (int y = 0; y < Y; y++) {
			__s64 acc = 0;
#pragma unroll
			for (int e = 0; e < DV; e++)
				acc += (__s64)wo->w[e][y] * sc->h[e];
			sc->A[y] = acc;
		}
#pragma unroll
		for (int j = 0; j < M; j++)
			Z += (__s64)ph->q[j] * fs->Z[j];
	}
	__u32 gk = ver * C * NPC + c * NPC + pc;
	struct glob_entry *ge = bpf_map_lookup_elem(&glob_tbl, &gk);
	if (ge && ge->hit) {
		flags |= CHIMERA_VFLAG_GLOBAL_HIT;
		COVER(GLOBAL_HIT);
		Z += ge->gz;
#pragma unroll
		for (int y = 0; y < Y; y++)
			sc->A[y] += ge->g[y];
	} else {
		COVER(GLOBAL_MISS);
	}
	/* 6. rules */
	__u64 pk = npk < CHIMERA_FLOW_PKTS_SAT ? npk : CHIMERA_FLOW_PKTS_SAT;
	struct rule_key rk = {.lo = (__u64)p->proto | (__u64)p->flags << 8 | (__u64)dir << 16 | pk << 24 |
				    (__u64)p->sport << 32 | (__u64)p->dport << 48,
			      .hi = p->ip_len};
	int hard_rule = -1, hard_label = 0;
	__u32 n_hard = pr->n_hard;
	for (__u32 i = 0; i < HMAX; i++) {
		if (i >= n_hard)
			break;
		__u32 kh = ver * HMAX + i;
		struct rule_entry *e = bpf_map_lookup_elem(&hard_tbl, &kh);
		if (e && ternary(&rk, e)) {
			hard_rule = e->rule;
			hard_label = e->label;
			break;
		}
	}
	if (hard_rule >= 0)
		COVER(HARD_HIT);
	else
		COVER(HARD_MISS);
	__u32 fired = 0;
	__u32 sg = p->proto == 6 ? 0 : p->proto == 17 ? 1 : 2;
	__u32 lo = pr->soft_lo[sg], hi = pr->soft_hi[sg];
	struct soft_block *sb = bpf_map_lookup_elem(&soft_tbl, &ver);
	if (!sb)
		return;
	for (int i = 0; i < SMAX; i++) {
		__u64 idx = (__u64)lo + i; /* 64-bit: no zero-extended copy escapes the bounds check */
		if (idx >= hi || idx >= SMAX)
			break;
		barrier_var(idx); /* keep clang from computing the address before the bounds check */
		fired |= (__u32)ternary(&rk, &sb->e[idx]) << (sb->e[idx].rule & 31);
	}
	if (fired)
		COVER(SOFT_FIRED);
	else
		COVER(SOFT_NONE);
	/* 7. fusion: fused_y = ALPHA*A_y + BETA*S_y*Z + ((GAMMA*E_y*Z) >> EMA_FRAC); first argmax; margin */
	struct soft_weights *sw = bpf_map_lookup_elem(&softw_tbl, &ver);
	struct class_ema_regs *ce = bpf_map_lookup_elem(&class_ema, &zero);
	if (!sw || !ce)
		return;
#pragma unroll
	for (int y = 0; y < Y; y++)
		sc->S[y] = 0;
	for (int r = 0; r < RMAX; r++) {
		if (!(fired & (1u << r)))
			continue;
#pragma unroll
		for (int y = 0; y < Y; y++)
			sc->S[y] += sw->w[r][y];
	}
	/* first argmax and the best of the others, in one pass on values (not indices): the label is a constant
	 * on each path, and an index read through it would make the verifier keep every path apart */
	__u32 label = 0;
	__s64 best = 0, second = 0;
	const int have = Y > 1;
#pragma unroll
	for (int y = 0; y < Y; y++) {
		__s64 f = (__s64)pr->alpha * sc->A[y] + (__s64)pr->beta * sc->S[y] * Z +
			  (((__s64)pr->gamma * ce->v[y] * Z) >> CHIMERA_EMA_FRAC);
		if (y == 0) {
			best = f;
		} else if (f > best) {
			second = best;
			best = f;
			label = y;
		} else if (y == 1 || f > second) {
			second = f;
		}
	}
	if (!have)
		second = best;
	__u64 margin = (__u64)(best - second);
	if (pr->gamma)
		COVER(PRIOR);
	if (have && best == second)
		COVER(TIE);
	if (margin > 0xFFFFFFFFull)
		COVER(MARGIN_CLAMP);
	__u32 score = margin > 0xFFFFFFFFull ? 0xFFFFFFFF : (__u32)margin;
	if (hard_rule >= 0 && pr->lambda_h) {
		label = hard_label;
		score = 0xFFFFFFFF;
		flags |= CHIMERA_VFLAG_HARD_VETO;
		COVER(VETO);
	} else if (hard_rule >= 0) {
		COVER(NO_VETO);
	}
	/* 8. two timescales: centroid occupancy and class EMA, C_j += EMA_STEP((u_j << EMA_FRAC) - C_j) */
	struct ema_regs *em = bpf_map_lookup_elem(&ema, &zero);
	if (em) {
#ifdef CHIMERA_COVERAGE
		/* checked outside the loop: a branch per centroid in it multiplies the verifier's paths */
		if (c < C) {
			__s64 one = (__s64)1 << CHIMERA_EMA_FRAC, ec = em->v[c];
			if (EMA_STEP(one - ec) == 0 && ec != one)
				COVER(EMA_STALL);
		}
#endif
		/* every register steps toward 0, then c's (kept aside) toward 1: the same values as u_j = [j == c],
		 * without a branch per centroid (each would split the verifier's paths) */
		if (c < C) {
			__s64 ec = em->v[c];
UNROLL_OUTER
			for (int j = 0; j < C; j++)
				em->v[j] += EMA_STEP(-em->v[j]);
			em->v[c] = ec + EMA_STEP(((__s64)1 << CHIMERA_EMA_FRAC) - ec);
		}
	}
	/* the class EMA the same way; the label goes through the scratch map first, so the verifier sees one
	 * unknown label here, not one constant per path */
	sc->label = label;
	asm volatile("" ::: "memory");
	__u32 lab = sc->label;
	if (lab < Y) {
		__s64 el = ce->v[lab];
#pragma unroll
		for (int y = 0; y < Y; y++)
			ce->v[y] += EMA_STEP(-ce->v[y]);
		ce->v[lab] = el + EMA_STEP(((__s64)1 << CHIMERA_EMA_FRAC) - el);
	}
	/* 9. token sample for the slow control loop */
	if ((n_parsed & ((1ull << CHIMERA_SAMPLE_SHIFT) - 1)) == 0) {
		__u64 taken = count(CNT_SAMPLES);
		COVER(SAMPLE);
		if (taken >= CHIMERA_SAMPLE_SLOTS)
			COVER(SAMPLE_WRAP);
		__u32 si = (__u32)taken & (CHIMERA_SAMPLE_SLOTS - 1);
		__u32 *slot_w = bpf_map_lookup_elem(&sample, &si);
		if (slot_w)
			*slot_w = (__u32)p->ip_len << 16 | iat_b << 12 | dir << 11 | (__u32)*fc << 8 | pc << 6;
	}
	v->flags = flags;
	v->label = label;
	v->rule_id = hard_rule >= 0 ? hard_rule : 0xFF;
	v->score = bpf_htonl(score);
	v->centroid = c;
}

/* 10. emit: grow the head, move the MACs to the front, write the header, redirect. A shimmed frame grows
 * by the difference only: the verdict header takes the shim's place, so the shim leaves with the frame. */
static __always_inline int emit(struct __sk_buff *skb, struct verdict_hdr *v, __u16 eth_type, __u64 t_in,
				__u32 egress, int shim)
{
	__u8 macs[12];
	__u32 grow = shim ? CHIMERA_VERDICT_LEN - CHIMERA_SHIM_LEN : CHIMERA_VERDICT_LEN;
	if (skb->len < 14 || load(skb, 0, macs, 12) || bpf_skb_change_head(skb, grow, 0)) {
		count(CNT_HEADROOM_FAIL);
		return bpf_redirect(egress, 0); /* forwarded unmarked; the collector counts it */
	}
	__u16 et = bpf_htons(CHIMERA_VERDICT_ETHERTYPE);
	v->orig_type = bpf_htons(eth_type);
	v->ts_in = bpf_cpu_to_be64(t_in);
	v->ts_out = bpf_cpu_to_be64(bpf_ktime_get_ns());
	/* the grown head is linear: write the 44 bytes directly (store_bytes when it is not) */
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	if (data + 14 + sizeof(*v) <= end) {
		__builtin_memcpy(data, macs, 12);
		__builtin_memcpy(data + 12, &et, 2);
		__builtin_memcpy(data + 14, v, sizeof(*v));
	} else {
		bpf_skb_store_bytes(skb, 0, macs, 12, 0);
		bpf_skb_store_bytes(skb, 12, &et, 2, 0);
		bpf_skb_store_bytes(skb, 14, v, sizeof(*v), 0);
	}
	count(CNT_REDIRECTED);
	return bpf_redirect(egress, 0);
}

SEC("tc")
int chimera_ingress(struct __sk_buff *skb)
{
	__u64 t_in = bpf_ktime_get_ns();
	__u32 in_if = skb->ifindex;
	__u32 *eg = bpf_map_lookup_elem(&ports, &in_if);
	if (!eg)
		return TC_ACT_OK;
	__u32 egress = *eg;
	struct verdict_hdr v = {};
	struct pkt p = {};
	struct clock_in ck = {};
	__u16 eth_type = 0;
	v.version = CHIMERA_VERDICT_VERSION;
	v.label = 0xFF;
	v.rule_id = 0xFF;
	int ok = parse(skb, &p, &eth_type, &ck);
	v.seq = bpf_htonl(ck.shim ? ck.index : CHIMERA_NO_SEQ);
	if (ok) {
		__u64 n_parsed = count(CNT_PARSED);
		COVER(PARSED);
		/* the clock: the trace's (shim) or the switch's own */
		__u64 now = ck.shim ? ck.trace_ns : t_in;
		__u32 zero = 0;
		__u64 *clk = bpf_map_lookup_elem(&clock, &zero);
		if (clk)
			*clk = now;
		classify(&p, now, n_parsed, &v);
	} else {
		count(CNT_UNPARSED);
		COVER(UNPARSED);
		v.flags = CHIMERA_VFLAG_UNPARSED;
		__u32 zero = 0;
		__u32 *act = bpf_map_lookup_elem(&active, &zero);
		__u32 ver = act ? (*act & 1) : 0;
		struct params *pr = bpf_map_lookup_elem(&params_tbl, &ver);
		if (pr)
			v.map_version = bpf_htons((__u16)pr->map_version);
	}
	if (ck.shim)
		v.flags |= CHIMERA_VFLAG_TRACE_CLOCK;
	return emit(skb, &v, eth_type, t_in, egress, ck.shim);
}

/* Benchmark baseline: the verdict header alone (no pipeline), to separate the cost of marking from
 * the cost of classifying (the plain-redirect baseline is redirect.bpf.c). */
SEC("tc")
int mark_only(struct __sk_buff *skb)
{
	__u64 t_in = bpf_ktime_get_ns();
	__u32 in_if = skb->ifindex;
	__u32 *eg = bpf_map_lookup_elem(&ports, &in_if);
	if (!eg)
		return TC_ACT_OK;
	__u8 eth[14];
	__u16 eth_type = 0;
	if (skb->len >= 14 && !bpf_skb_load_bytes(skb, 0, eth, 14))
		eth_type = ((__u16)eth[12] << 8) | eth[13];
	struct verdict_hdr v = {.version = CHIMERA_VERDICT_VERSION, .flags = CHIMERA_VFLAG_UNPARSED, .label = 0xFF,
				.rule_id = 0xFF, .seq = bpf_htonl(CHIMERA_NO_SEQ)};
	return emit(skb, &v, eth_type, t_in, *eg, 0);
}

char LICENSE[] SEC("license") = "GPL";
