// SPDX-License-Identifier: GPL-2.0
/* Plain port-to-port redirect (no pipeline, no artifact): s1's program when the software
 * classifier host does the classifying (the † configurations), and a throughput baseline. */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "ports.bpf.h"

SEC("tc")
int redirect(struct __sk_buff *skb)
{
	__u32 in_if = skb->ifindex;
	__u32 *eg = bpf_map_lookup_elem(&ports, &in_if);
	if (!eg)
		return TC_ACT_OK;
	return bpf_redirect(*eg, 0);
}

char LICENSE[] SEC("license") = "GPL";
