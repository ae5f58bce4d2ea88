// SPDX-License-Identifier: GPL-2.0
/* Chimera pipeline as a tc (clsact ingress) eBPF program.
 *
 * Integer semantics are those of chimera/pipeline/reference.py (its module
 * docstring is the specification); constants come from the generated header
 * shared with p4/chimera.p4. Narrow-key range/ternary tables (length bins,
 * TCP-flag classes, the global layer keyed on (centroid, protocol class)) are
 * installed pre-resolved as dense arrays: the loader computes the same first
 * match a TCAM would return. Hard/soft rules keep a true ternary linear scan.
 * Every model table has two versions; one write to `active` flips them.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "chimera_constants.h"

#define NV 2
#define MAX1(x) ((x) > 0 ? (x) : 1)
#define Y CHIMERA_NUM_CLASSES
#define C CHIMERA_NUM_CENTROIDS
#define L CHIMERA_WINDOW
#define NPC CHIMERA_PROTO_CLASSES
#define HMAX MAX1(CHIMERA_HARD_ENTRIES)
#define SMAX MAX1(CHIMERA_SOFT_ENTRIES)
#define RMAX MAX1(CHIMERA_SOFT_RULES)
#define NKEY 7

#if Y > 16
#error "the eBPF target supports at most 16 classes (stack budget)"
#endif
#if CHIMERA_SOFT_RULES > 32
#error "the eBPF target supports at most 32 soft rules (fired-rule bitmask)"
#endif

struct flow_slot {
	__u32 sig;
	__u32 last;
	__u16 pkts;
	__u8 orient;
	__u8 head;
	__u8 ring[L];
};

struct win_entry {
	__u32 k;
	__s32 p[Y];
};

struct glob_entry {
	__u32 hit;
	__u32 gz;
	__s32 g[Y];
};

struct rule_entry {
	__u16 value[NKEY];
	__u16 mask[NKEY];
	__u8 rule;
	__u8 label;
	__u8 pad[2];
};

struct soft_weights {
	__s32 w[Y];
};

struct params {
	__u32 alpha;
	__u32 beta;
	__u32 lambda_h;
	__u32 map_version;
	__u32 n_hard;
	__u32 n_soft;
	__u32 use_window;
	__u32 pad;
};

struct ema_regs {
	__s64 v[C];
};

struct verdict_hdr {
	__u8 version;
	__u8 flags;
	__u8 label;
	__u8 rule_id;
	__u32 score;
	__u16 map_version;
	__u8 centroid;
	__u8 reserved;
	__u64 ts_in;
	__u64 ts_out;
	__u16 orig_type;
} __attribute__((packed));

_Static_assert(sizeof(struct verdict_hdr) == CHIMERA_VERDICT_LEN, "verdict header size");

enum counter {
	CNT_EVICTIONS = 0,
	CNT_NEW_FLOWS,
	CNT_PARSED,
	CNT_UNPARSED,
	CNT_HEADROOM_FAIL,
	CNT_REDIRECTED,
	CNT_MAX = 8,
};

#define ARRAY(name, vtype, n)                                                                                  \
	struct {                                                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                              \
		__uint(max_entries, (n));                                                              \
		__type(key, __u32);                                                                            \
		__type(value, vtype);                                                                          \
	} name SEC(".maps")

ARRAY(len_tbl, __u8, NV * 65536);
ARRAY(flag_tbl, __u8, NV * 256);
ARRAY(map_tbl, __u8, NV * CHIMERA_MAP_KEYS);
ARRAY(win_tbl, struct win_entry, NV * C * C);
ARRAY(glob_tbl, struct glob_entry, NV * C * NPC);
ARRAY(hard_tbl, struct rule_entry, NV * HMAX);
ARRAY(soft_tbl, struct rule_entry, NV * SMAX);
ARRAY(softw_tbl, struct soft_weights, NV * RMAX);
ARRAY(params_tbl, struct params, NV);
ARRAY(active, __u32, 1);
ARRAY(flows, struct flow_slot, CHIMERA_FLOW_SLOTS);
ARRAY(ema, struct ema_regs, 1);
ARRAY(counters, __u64, CNT_MAX);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		__sync_fetch_and_add(c, 1);
}

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

/* Loop bodies run under bpf_loop(): the verifier checks each body once,
 * whatever the trip count, which keeps verification linear in the program. */
struct crc_ctx {
	__u8 b[16];
	__u32 crc;
};

static long crc_step(__u32 i, void *data)
{
	struct crc_ctx *x = data;
	__u32 crc = x->crc ^ x->b[i & 15];
#pragma unroll
	for (int k = 0; k < 8; k++)
		crc = (crc >> 1) ^ (0xEDB88320 & (0u - (crc & 1)));
	x->crc = crc;
	return 0;
}

static __always_inline int ternary(const __u16 *key, const struct rule_entry *e)
{
	for (int f = 0; f < NKEY; f++)
		if ((key[f] & e->mask[f]) != e->value[f])
			return 0;
	return 1;
}

struct win_ctx {
	__u32 ver, c, nv;
	__u8 ring[L];
	__s64 Z;
	__s64 A[Y];
};

static long win_step(__u32 i, void *data)
{
	struct win_ctx *w = data;
	if (i >= w->nv)
		return 1;
	__u32 wk = w->ver * C * C + w->c * C + (w->ring[i & (L - 1)] % C);
	struct win_entry *we = bpf_map_lookup_elem(&win_tbl, &wk);
	if (!we)
		return 1;
	w->Z += we->k;
#pragma unroll
	for (int y = 0; y < Y; y++)
		w->A[y] += we->p[y];
	return 0;
}

struct rule_ctx {
	__u16 key[NKEY];
	__u32 ver, n;
	int hit, label;
	__u32 fired;
};

static long hard_step(__u32 i, void *data)
{
	struct rule_ctx *x = data;
	if (i >= x->n)
		return 1;
	__u32 k = x->ver * HMAX + i;
	struct rule_entry *e = bpf_map_lookup_elem(&hard_tbl, &k);
	if (e && ternary(x->key, e)) {
		x->hit = e->rule;
		x->label = e->label;
		return 1;
	}
	return 0;
}

static long soft_step(__u32 i, void *data)
{
	struct rule_ctx *x = data;
	if (i >= x->n)
		return 1;
	__u32 k = x->ver * SMAX + i;
	struct rule_entry *e = bpf_map_lookup_elem(&soft_tbl, &k);
	if (e && ternary(x->key, e))
		x->fired |= 1u << (e->rule & 31);
	return 0;
}

struct pkt {
	__u32 src, dst;       /* host order */
	__u16 sport, dport;
	__u16 ip_len;
	__u8 proto, flags;
};

/* Step 0: the parser. Returns 1 for classifiable IPv4 packets. */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p, __u16 *eth_type)
{
	__u8 eth[14];
	__u8 ip[20];
	__u32 len = skb->len;
	if (len < 14 || bpf_skb_load_bytes(skb, 0, eth, 14))
		return 0;
	*eth_type = ((__u16)eth[12] << 8) | eth[13];
	if (*eth_type != 0x0800)
		return 0;
	if (len < 14 + 20 || bpf_skb_load_bytes(skb, 14, ip, 20))
		return 0;
	__u32 ihl = (ip[0] & 0x0F) * 4;
	if ((ip[0] >> 4) != 4 || ihl < 20)
		return 0;
	if (len - 14 < ihl)
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
	__u32 l4 = 14 + ihl;
	if (p->proto == 6 || p->proto == 17) {
		__u8 h[14];
		__u32 need = p->proto == 6 ? 20 : 8;
		if (len - l4 < need)
			return 0;
		if (bpf_skb_load_bytes(skb, l4 & 0x7F, h, p->proto == 6 ? 14 : 4))
			return 0;
		p->sport = ((__u16)h[0] << 8) | h[1];
		p->dport = ((__u16)h[2] << 8) | h[3];
		if (p->proto == 6)
			p->flags = h[13];
	}
	return 1;
}

/* Steps 1-8 for one parsed packet; fills the verdict fields. */
static __always_inline void classify(struct pkt *p, __u64 now, struct verdict_hdr *v)
{
	__u32 zero = 0;
	__u32 *act = bpf_map_lookup_elem(&active, &zero);
	__u32 ver = act ? (*act & 1) : 0;
	struct params *pr = bpf_map_lookup_elem(&params_tbl, &ver);
	if (!pr)
		return;
	v->map_version = bpf_htons((__u16)pr->map_version);

	/* 1. flow slot */
	int swap = p->src > p->dst || (p->src == p->dst && p->sport > p->dport);
	__u32 lo_ip = swap ? p->dst : p->src, hi_ip = swap ? p->src : p->dst;
	__u16 lo_p = swap ? p->dport : p->sport, hi_p = swap ? p->sport : p->dport;
	struct crc_ctx cx = {.b = {lo_ip >> 24, lo_ip >> 16, lo_ip >> 8, lo_ip, hi_ip >> 24, hi_ip >> 16, hi_ip >> 8,
				   hi_ip, lo_p >> 8, lo_p, hi_p >> 8, hi_p, p->proto},
			     .crc = 0xFFFFFFFF};
	bpf_loop(13, crc_step, &cx, 0);
	__u32 crc = ~cx.crc;
	__u32 slot = crc & (CHIMERA_FLOW_SLOTS - 1);
	struct flow_slot *fs = bpf_map_lookup_elem(&flows, &slot);
	if (!fs)
		return;
	__u8 flags = 0;
	if (fs->pkts > 0 && fs->sig != crc) {
		flags |= CHIMERA_VFLAG_EVICTED;
		count(CNT_EVICTIONS);
		fs->pkts = 0;
	}
	/* 2. tokenize */
	__u32 tsu = (__u32)(now >> CHIMERA_IAT_SHIFT);
	__u32 iat_b = 0;
	if (fs->pkts == 0) {
		flags |= CHIMERA_VFLAG_NEW_FLOW;
		count(CNT_NEW_FLOWS);
		fs->sig = crc;
		fs->orient = swap;
		fs->head = 0;
	} else {
		__u32 bl = bit_length32(tsu - fs->last);
		iat_b = 1 + (bl < CHIMERA_IAT_BUCKETS - 2 ? bl : CHIMERA_IAT_BUCKETS - 2);
	}
	__u32 dir = swap ^ fs->orient;
	/* 3. map */
	__u32 k = ver * 65536 + p->ip_len;
	__u8 *lb = bpf_map_lookup_elem(&len_tbl, &k);
	k = ver * 256 + p->flags;
	__u8 *fc = bpf_map_lookup_elem(&flag_tbl, &k);
	if (!lb || !fc)
		return;
	__u32 pc = p->proto == 6 ? 1 : p->proto == 17 ? 2 : p->proto == 1 ? 3 : 0;
	__u32 key = ((((__u32)*lb * CHIMERA_IAT_BUCKETS + iat_b) * 2 + dir) * CHIMERA_FLAG_CLASSES + *fc) * NPC + pc;
	k = ver * CHIMERA_MAP_KEYS + key;
	__u8 *cp = bpf_map_lookup_elem(&map_tbl, &k);
	if (!cp)
		return;
	__u32 c = *cp % C;
	/* 4. window ring */
	__u32 h = fs->head & (L - 1);
	fs->ring[h] = c;
	fs->head = (h + 1) & (L - 1);
	if (fs->pkts < 0xFFFF)
		fs->pkts += 1;
	fs->last = tsu;
	__u32 nv = fs->pkts < L ? fs->pkts : L;
	/* 5. attention, division-free */
	struct win_ctx wx = {.ver = ver, .c = c, .nv = nv};
	__builtin_memcpy(wx.ring, fs->ring, L);
	if (pr->use_window)
		bpf_loop(L, win_step, &wx, 0);
	__s64 Z = wx.Z;
	__s64 A[Y];
#pragma unroll
	for (int y = 0; y < Y; y++)
		A[y] = wx.A[y];
	__u32 gk = ver * C * NPC + c * NPC + pc;
	struct glob_entry *ge = bpf_map_lookup_elem(&glob_tbl, &gk);
	if (ge && ge->hit) {
		flags |= CHIMERA_VFLAG_GLOBAL_HIT;
		Z += ge->gz;
		for (int y = 0; y < Y; y++)
			A[y] += ge->g[y];
	}
	/* 6. rules */
	__u16 rk[NKEY] = {p->proto, p->flags, dir, fs->pkts < CHIMERA_FLOW_PKTS_SAT ? fs->pkts : CHIMERA_FLOW_PKTS_SAT,
			  p->sport, p->dport, p->ip_len};
	struct rule_ctx rx = {.ver = ver, .n = pr->n_hard, .hit = -1};
	__builtin_memcpy(rx.key, rk, sizeof(rk));
	bpf_loop(HMAX, hard_step, &rx, 0);
	int hard_rule = rx.hit, hard_label = rx.label;
	rx.n = pr->n_soft;
	rx.fired = 0;
	bpf_loop(SMAX, soft_step, &rx, 0);
	__u32 fired = rx.fired;
	/* 7. fusion: fused_y = ALPHA*A_y + BETA*S_y*Z; label = first argmax; score = top - second */
	__s64 S[Y] = {};
	for (int r = 0; r < RMAX; r++) {
		if (!(fired & (1u << r)))
			continue;
		__u32 wk = ver * RMAX + r;
		struct soft_weights *w = bpf_map_lookup_elem(&softw_tbl, &wk);
		if (!w)
			return;
		for (int y = 0; y < Y; y++)
			S[y] += w->w[y];
	}
	__u32 label = 0;
	for (int y = 0; y < Y; y++) {
		A[y] = (__s64)pr->alpha * A[y] + (__s64)pr->beta * S[y] * Z;
		if (A[y] > A[label])
			label = y;
	}
	__s64 best = A[label & 15], second = 0;
	int have = 0;
	for (int y = 0; y < Y; y++) {
		if (y == label)
			continue;
		if (!have || A[y] > second) {
			second = A[y];
			have = 1;
		}
	}
	if (!have)
		second = best;
	__u64 margin = (__u64)(best - second);
	__u32 score = margin > 0xFFFFFFFFull ? 0xFFFFFFFF : (__u32)margin;
	if (hard_rule >= 0 && pr->lambda_h) {
		label = hard_label;
		score = 0xFFFFFFFF;
		flags |= CHIMERA_VFLAG_HARD_VETO;
	}
	/* 8. two-timescale statistics */
	struct ema_regs *em = bpf_map_lookup_elem(&ema, &zero);
	if (em) {
		/* C_j += ((u_j << EMA_FRAC) - C_j) >> EMA_SHIFT, u_j = [j == c]: branch-free, one lookup */
		for (int j = 0; j < C; j++) {
			__s64 u = (__s64)(j == c) << CHIMERA_EMA_FRAC;
			em->v[j] += (u - em->v[j]) >> CHIMERA_EMA_SHIFT;
		}
	}
	v->flags = flags;
	v->label = label;
	v->rule_id = hard_rule >= 0 ? hard_rule : 0xFF;
	v->score = bpf_htonl(score);
	v->centroid = c;
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
	__u16 eth_type = 0;
	v.version = 1;
	v.label = 0xFF;
	v.rule_id = 0xFF;
	if (parse(skb, &p, &eth_type)) {
		count(CNT_PARSED);
		classify(&p, t_in, &v);
	} else {
		count(CNT_UNPARSED);
		v.flags = CHIMERA_VFLAG_UNPARSED;
		__u32 zero = 0;
		__u32 *act = bpf_map_lookup_elem(&active, &zero);
		__u32 ver = act ? (*act & 1) : 0;
		struct params *pr = bpf_map_lookup_elem(&params_tbl, &ver);
		if (pr)
			v.map_version = bpf_htons((__u16)pr->map_version);
	}
	/* 9. emit: grow the head, move the MACs to the front, write the header */
	__u8 macs[12];
	if (skb->len < 14 || bpf_skb_load_bytes(skb, 0, macs, 12) ||
	    bpf_skb_change_head(skb, CHIMERA_VERDICT_LEN, 0)) {
		count(CNT_HEADROOM_FAIL);
		return bpf_redirect(egress, 0); /* forwarded unmarked; the collector counts it */
	}
	__u16 et = bpf_htons(CHIMERA_VERDICT_ETHERTYPE);
	v.orig_type = bpf_htons(eth_type);
	v.ts_in = bpf_cpu_to_be64(t_in);
	bpf_skb_store_bytes(skb, 0, macs, 12, 0);
	bpf_skb_store_bytes(skb, 12, &et, 2, 0);
	v.ts_out = bpf_cpu_to_be64(bpf_ktime_get_ns());
	bpf_skb_store_bytes(skb, 14, &v, sizeof(v), 0);
	count(CNT_REDIRECTED);
	return bpf_redirect(egress, 0);
}

/* The baseline for `invoke bench --what switch`: same path, no pipeline. */
SEC("tc")
int bare_redirect(struct __sk_buff *skb)
{
	__u32 in_if = skb->ifindex;
	__u32 *eg = bpf_map_lookup_elem(&ports, &in_if);
	if (!eg)
		return TC_ACT_OK;
	return bpf_redirect(*eg, 0);
}

char LICENSE[] SEC("license") = "GPL";
