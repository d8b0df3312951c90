// Package fault injects network faults for tests with eBPF: a tc
// classifier, assembled in Go with github.com/cilium/ebpf/asm (no C
// toolchain needed), attached through tcx (kernel 6.6 or later) to the
// ingress or egress of one interface.
//
// The program looks at IPv4/UDP packets behind an Ethernet header
// (first fragments only; IPv6, VLAN tags and other protocols pass
// untouched). A packet matches when its destination port and, for RoCEv2,
// its BTH destination QP number equal the configured ones. Matching
// packets are dropped at random (bpf_get_prandom_u32 against
// [Config].Fraction), all dropped ([Config].BlackHole), or passed with one
// payload byte inverted ([Config].Corrupt; the UDP checksum is updated
// with bpf_l4_csum_replace so the socket still receives it and only an
// end-to-end check such as the RoCE ICRC notices). The configuration
// lives in an array map, so [Fault.Set] changes it while traffic flows;
// per-CPU counters report what was seen, dropped and corrupted.
// [Config].AllIPv4 instead drops every IPv4 packet, TCP included: a path
// that carries nothing, the connection manager's dials included.
//
// tcx was chosen over XDP because it works the same on both directions
// and on any device, veth included, without a program on the peer.
//
// [Drop] resolves the interface in the calling thread's network
// namespace: call it inside netns.NS.Do to reach a test namespace. A
// [Fault] owns its program, maps and link; Close detaches and frees them.
// Deleting the interface (or its namespace) detaches the program too.
// Everything needs root (CAP_BPF and CAP_NET_ADMIN).
package fault
