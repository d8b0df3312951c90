// Package ucttest is the conformance suite of the uct contract. Every
// transport runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		ucttest.Run(t, func(t testing.TB) *ucttest.Pair { ... })
//	}
//
// The factory returns two ifaces (A and B, possibly in one process) that
// can connect to each other, with the memory domains they were opened on.
// Each case asks for a fresh pair, connects A to B and drives both with
// Progress from the test goroutine, failing (not hanging) after a deadline.
// Cases that need a capability the iface does not announce in its Cap are
// skipped with the reason.
//
// The package owns only test code; it is imported by transports' tests and
// never by a transport itself.
package ucttest
