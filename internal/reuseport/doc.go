// Package reuseport lets several processes on one host share one UDP
// address, normally the RoCEv2 port 4791, and get each datagram delivered
// to the process that owns its destination queue pair.
//
// Every member binds the address with SO_REUSEPORT, which makes the
// sockets one kernel reuseport group, and attaches an SK_REUSEPORT eBPF
// program (assembled with github.com/cilium/ebpf/asm) with
// SO_ATTACH_REUSEPORT_EBPF. The program reads byte 13 of the packet as the
// kernel hands it over (sk_reuseport_md data starts at the UDP header, so
// this is UDP payload byte 5, the top byte of the 24-bit BTH DestQP) and
// calls bpf_sk_select_reuseport with it as index into a
// REUSEPORT_SOCKARRAY of 256 slots. A member claims the lowest free slot
// 1..255 by inserting its socket with BPF_NOEXIST and owns the QPNs
// slot<<16 to slot<<16|0xffff ([Member.QPNRange], [SlotOf]); slot 0 (QPNs
// below 0x10000, among them QPs 0 and 1) is never claimed. Datagrams for
// an unclaimed slot, or too short to hold a BTH, go where the kernel's
// 4-tuple hash sends them: to some member, which should drop them as
// unknown QPNs.
//
// The socket array and the program are shared by all members through
// bpffs pins in [PinRoot]/reuseport-v1-<netns inode>-<ip>-<port>/ (bpffs
// is mounted at [BPFFS] if it is not). Creating or opening the pins and
// claiming a slot happen under an flock on [PinRoot], so processes that
// start together race safely. When a member closes, or its process dies,
// the kernel removes its socket from the array and the slot is free; the
// last member to Close removes the pins, and so does a Listen that fails
// to join a group that has no member. Pins left by a group whose last
// member crashed are harmless, and do not pile up: every Listen removes
// the pins of the other groups whose socket array is empty (a later group
// on the same key would also find an empty array and reuse them).
//
// Listen fails with an error wrapping [ErrUnavailable] when eBPF, bpffs
// or the pin directory is not permitted (not root, no CAP_BPF, read-only
// or missing bpffs, old kernel); the caller should then bind a port of
// its own and carry it in its address.
//
// The package owns the member's socket, its slot and the group's pins.
package reuseport
