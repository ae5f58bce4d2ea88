/* The port map shared by every program of s1: ingress ifindex -> egress ifindex. */
#ifndef CHIMERA_PORTS_BPF_H
#define CHIMERA_PORTS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} ports SEC(".maps");

#endif
