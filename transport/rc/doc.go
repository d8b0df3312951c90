// Package rc is the uct transport over RDMA reliable-connected queue pairs
// of the verbs model in transport/rc/verbs (a software RoCEv2 provider over
// UDP that speaks the same wire format as a RoCEv2 HCA).
//
// Wire formats owned by this package, each with a fuzz target:
//
//   - the iface address (32 bytes): version, the RoCEv2 UDP port, the TCP
//     port of the iface's connection manager, the IPv4 address (as the
//     IPv4-mapped GID) and a random nonce of the iface instance;
//   - the packed remote key (13 bytes): version, the verbs rkey and the
//     random id of the memory domain that registered the memory;
//   - the connection manager messages REQ, REP, REJ and DREQ, exchanged
//     over TCP when an endpoint is created (REQ/REP carry QP number, start
//     PSN, path MTU, the iface nonces and the AM credit window) and closed
//     (DREQ lets the passive side destroy its QP);
//   - the immediate data of SEND_WITH_IMM: the AM id in the low 5 bits, or
//     bit 31 for a credit grant with the number of credits in the low 16
//     bits.
package rc
