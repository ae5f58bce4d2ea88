// SPDX-License-Identifier: GPL-2.0
/* The kernel probe behind `--target auto`: the smallest tc program that uses what chimera.bpf.c needs from
 * the kernel (bpf_loop, kernel >= 5.17; an mmapable array). If this loads, the pipeline's helpers exist. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} probe_map SEC(".maps");

static long step(__u32 i, void *ctx)
{
	*(__u64 *)ctx += i;
	return 0;
}

SEC("tc")
int probe(struct __sk_buff *skb)
{
	__u64 acc = 0;
	__u32 zero = 0;
	bpf_loop(4, step, &acc, 0);
	__u64 *v = bpf_map_lookup_elem(&probe_map, &zero);
	if (v)
		*v = acc;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
