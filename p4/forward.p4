/* Plain forwarding on v1model: port 1 <-> port 2, nothing parsed beyond Ethernet, no tables, no state.
 * The yardstick of `invoke bench --what bmv2ratio`: chimera.p4 against this program on the same BMv2 build. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t { ethernet_t eth; }
struct meta_t { }

parser FwdParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control FwdVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control FwdIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.ingress_port == 1) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control FwdEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control FwdCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control FwdDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); }
}

V1Switch(FwdParser(), FwdVerify(), FwdIngress(), FwdEgress(), FwdCompute(), FwdDeparser()) main;
