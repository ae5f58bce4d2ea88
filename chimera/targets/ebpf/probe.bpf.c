// SPDX-License-Identifier: GPL-2.0
/* The kernel probe behind `--target auto`: the smallest tc program that uses what chimera.bpf.c needs from
 * the kernel (a bounded loop the verifier walks, kernel >= 5.3; an mmapable array, >= 5.5). If this loads, the
 * pipeline's kernel features exist. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} probe_map SEC(".maps");

SEC("tc")
int probe(struct __sk_buff *skb)
{
	__u64 acc = 0;
	__u32 n = skb->len & 3;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < 4; i++) { /* a back edge the verifier walks: bounded loops, 5.3 */
		if (i >= n)
			break;
		acc += (__u64)i * skb->protocol;
		asm volatile("" : "+r"(acc)); /* kept a loop: clang would fold it */
	}
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&probe_map, &zero);
	if (v)
		*v = acc + skb->len;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
