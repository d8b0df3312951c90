// Package netns is test plumbing for network tests: it builds a pair of
// named Linux network namespaces joined by a veth pair, with IPv4
// addresses, and runs code or processes inside either namespace.
// [NewStar] builds n namespaces on one subnet instead, each joined by a
// veth pair to a bridge in a hub namespace, for tests of more than two
// processes; [NewRails] builds two namespaces joined by several veth
// pairs on subnets of their own, two hosts with one NIC per rail, and
// [NewSwitchedRails] puts a switch (a bridge in a hub namespace) on each
// rail, so that one host's link going down leaves the other's up.
//
// Namespaces are created the way "ip netns add" does it (unshare and a
// bind mount under /run/netns), links and addresses are configured over
// rtnetlink; iproute2 is needed only by [NS.SetRate] (tc). Everything
// [NewPair] creates is deleted by the test's Cleanup (or [Pair.Close],
// [Star.Close], [Rails.Close]): the veth pairs first, so it goes away
// even if a leaked socket still pins a namespace, then the namespace
// mounts. Names start with [Prefix].
//
// [NS.Do] runs a function on an OS thread switched into the namespace;
// sockets and eBPF links made there belong to the namespace.
// [NS.Command] starts a process inside it. Link faults: [NS.SetLink]
// takes the veth end down and up again, [NS.Flap] does it in a bounded
// loop, and [NS.SetRate] limits what it sends, standing in for a slower
// NIC.
//
// Everything needs root; [NewPair] and [RequireRoot] skip the test
// otherwise. Programs (bench/perftest's local mode) use [New], which
// returns [ErrNotRoot] instead and leaves the Close to the caller. The
// package owns the namespaces and links it creates and nothing else.
package netns
