/* The † path on BMv2: s1 only carries frames between the hosts and the software classifier host sc.
 * h1 (port 1) -> sc (port 3) -> h2 (port 2); nothing parsed beyond Ethernet, no tables, no state.
 * Everything else is dropped, so nothing reaches h2 unclassified. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t { ethernet_t eth; }
struct meta_t { }

parser RdParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control RdVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control RdIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 1) {
            sm.egress_spec = 3;
        } else if (sm.ingress_port == 3) {
            sm.egress_spec = 2;
        } else {
            mark_to_drop(sm);
        }
    }
}

control RdEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control RdCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control RdDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); }
}

V1Switch(RdParser(), RdVerify(), RdIngress(), RdEgress(), RdCompute(), RdDeparser()) main;
