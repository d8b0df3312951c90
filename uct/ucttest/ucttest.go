package ucttest

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Pair is two ifaces that can connect to each other and the memory domains
// they were opened on. Both must live in the calling process: the suite
// reads and writes B's registered memory directly to check puts and gets
// (cross-process behaviour belongs to the transport's own tests). Cleanup, if set, is run after the case (after the
// ifaces have been closed by the suite); it must tolerate ifaces that are
// already closed.
type Pair struct {
	A, B     uct.Iface
	MDA, MDB uct.MD
	Cleanup  func()
}

// Factory opens a fresh Pair for one case. It should fail t (t.Fatal) if it
// cannot.
type Factory func(t testing.TB) *Pair

// Timeout bounds every wait of the suite: a condition that does not hold
// after Timeout of progress fails the case.
var Timeout = 10 * time.Second

// Run runs every conformance case as a subtest of t.
func Run(t *testing.T, f Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h *Harness)
	}{
		{"AMShort", testAMShort},
		{"AMBcopy", testAMBcopy},
		{"AMZcopy", testAMZcopy},
		{"AMIDs", testAMIDs},
		{"PutGet/Register", func(t *testing.T, h *Harness) { testPutGet(t, h, false) }},
		{"PutGet/Alloc", func(t *testing.T, h *Harness) { testPutGet(t, h, true) }},
		{"Atomic32", func(t *testing.T, h *Harness) { testAtomics(t, h, 4) }},
		{"Atomic64", func(t *testing.T, h *Harness) { testAtomics(t, h, 8) }},
		{"FlushOrdering", testFlushOrdering},
		{"IfaceFlush", testIfaceFlush},
		{"Fence", testFence},
		{"BackPressure", testBackPressure},
		{"Notify", testNotify},
		{"ArmWaitWake", testArmWaitWake},
		{"PeerClosed", testPeerClosed},
		{"PeerClosedIsolation", func(t *testing.T, h *Harness) { testPeerClosedIsolation(t, h, f) }},
		{"CloseInFlight/Iface", func(t *testing.T, h *Harness) { testCloseInFlight(t, h, false) }},
		{"CloseInFlight/Endpoint", func(t *testing.T, h *Harness) { testCloseInFlight(t, h, true) }},
		{"FlushCancel", testFlushCancel},
		{"UseAfterClose", testUseAfterClose},
		{"BadRKey", testBadRKey},
		{"ClosedMemKey", testClosedMemKey},
		{"BadRemoteAddress", testBadRemoteAddress},
		{"BadIfaceAddress", testBadIfaceAddress},
		{"ErrorHandler", testErrorHandler},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness(t, f)
			c.fn(t, h)
		})
	}
}
