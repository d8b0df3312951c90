package verbs

import (
	"testing"
	"time"
)

// TestRequesterWindow: a requester keeps up to maxInflight (2048) PSNs
// outstanding before it waits for an ACK, so that a responder
// descheduled for a while (a process on a loaded host) finds 8 MiB at
// MTU 4096 waiting in its socket rather than having stalled the sender
// after 2 MiB.
func TestRequesterWindow(t *testing.T) {
	// 1 s per ACK timeout: none fires while the window fills.
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU1024, bufSize: 4 << 20, timeout: 18})
	const pkts, window = 3072, 2048
	fill(a.buf[:pkts*1024], 5)
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled,
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, pkts*1024)}}); err != nil {
		t.Fatal(err)
	}
	// Only the requester runs: it sends until its window is full, and
	// then a little longer to show that it stops there.
	deadline := time.Now().Add(500 * time.Millisecond)
	for a.d.Counters().TxPackets < window && time.Now().Before(deadline) {
		a.d.Progress()
	}
	for i := 0; i < 100; i++ {
		a.d.Progress()
	}
	if c := a.d.Counters(); c.TxPackets != window || c.Timeouts != 0 {
		t.Fatalf("with no ACK the requester sent %d packets (%d ACK timeouts), want a window of %d and none", c.TxPackets, c.Timeouts, window)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "written", b.buf[:pkts*1024], a.buf[:pkts*1024])
}
