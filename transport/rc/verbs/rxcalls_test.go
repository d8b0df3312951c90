package verbs

import "testing"

// TestRxCallsCounted: every receive system call of an engine pass counts
// in RxCalls, and one that finds the socket empty in RxEmpty as well, so
// a benchmark can tell the polls that found data from the empty ones.
func TestRxCallsCounted(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096})
	before := b.d.Counters()
	b.d.Progress()
	c := b.d.Counters()
	if calls, empty := c.RxCalls-before.RxCalls, c.RxEmpty-before.RxEmpty; calls != 1 || empty != 1 {
		t.Fatalf("a pass over an empty socket: %d receive calls, %d empty; want 1 and 1", calls, empty)
	}
	const size = 4096
	fill(a.buf[:size], 7)
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled,
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, size)}}); err != nil {
		t.Fatal(err)
	}
	a.d.Progress() // the WRITE's one packet leaves
	before = b.d.Counters()
	b.d.Progress()
	c = b.d.Counters()
	if got := c.RxPackets - before.RxPackets; got != 1 {
		t.Fatalf("a pass after one packet was sent received %d packets, want 1", got)
	}
	if calls, empty := c.RxCalls-before.RxCalls, c.RxEmpty-before.RxEmpty; calls != 1 || empty != 0 {
		t.Fatalf("a pass over one waiting packet: %d receive calls, %d empty; want 1 and 0", calls, empty)
	}
	for i, wc := range poll(t, a.cq, 1, a.d, b.d) {
		checkWC(t, wc, uint64(i+1), WCSuccess, WCRDMAWrite)
	}
	sameBytes(t, "written", b.buf[:size], a.buf[:size])
}
