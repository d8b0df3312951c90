package verbs

import (
	"testing"
	"time"
)

func TestCwndArithmetic(t *testing.T) {
	var c cwnd
	c.reset()
	if c.size != initWindow || c.thresh != maxWindow {
		t.Fatalf("fresh window %+v, want size %d threshold %d", c, initWindow, maxWindow)
	}
	// the window never opens past its cap
	c.grow(1 << 20)
	if c.size != maxWindow {
		t.Fatalf("window grew to %d, want the cap %d", c.size, maxWindow)
	}
	c.timedOut()
	if c.size != minWindow || c.thresh != maxWindow/2 {
		t.Fatalf("after a timeout %+v, want size %d threshold %d", c, minWindow, maxWindow/2)
	}
	// Slow start: every PSN acknowledged adds one, up to the threshold.
	c.grow(100)
	if c.size != minWindow+100 {
		t.Fatalf("after 100 PSNs acknowledged: size %d, want %d", c.size, minWindow+100)
	}
	c.grow(maxWindow)
	if c.size != maxWindow/2 {
		t.Fatalf("slow start past the threshold: size %d, want %d", c.size, maxWindow/2)
	}
	// Additive: ackEvery more per window acknowledged.
	c.grow(c.size - 1)
	if c.size != maxWindow/2 {
		t.Fatalf("additive step before a window was acknowledged: size %d", c.size)
	}
	c.grow(1)
	if c.size != maxWindow/2+ackEvery {
		t.Fatalf("additive step: size %d, want %d", c.size, maxWindow/2+ackEvery)
	}
	c.gap()
	if want := int32((maxWindow/2 + ackEvery) / 2); c.size != want || c.thresh != want {
		t.Fatalf("after a gap %+v, want size and threshold %d", c, want)
	}
	for i := 0; i < 20; i++ {
		c.gap()
		c.timedOut()
	}
	if c.size != minWindow || c.thresh != minWindow {
		t.Fatalf("after many losses %+v, want size and threshold %d", c, minWindow)
	}
}

// windowRig is a pair on a 4096-byte MTU whose engines only the test
// runs, with a 16.8 ms local ACK timeout.
func windowRig(t *testing.T) (a, b *end) {
	return pair(t, rigOpts{bufSize: 16 << 20, mtu: MTU4096, noWatchdog: true, timeout: 12})
}

// sentWhileDeaf posts an n-byte WRITE from a to b and runs only a's
// engine: the packets a sends before it waits for an ACK are its window.
func sentWhileDeaf(t *testing.T, a, b *end, n int) uint64 {
	t.Helper()
	before := a.d.Counters()
	wr := SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, n)},
		RemoteAddr: b.mr.Addr() + uint64(n), RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		a.d.Progress()
	}
	return released(before, a.d.Counters())
}

// released is the number of packets the requester let out between two
// readings of its counters: those the socket took and those it refused
// (EAGAIN or ENOBUFS past the send's 20 ms wait on a loaded machine),
// which the window released as it would a packet lost on the wire.
func released(c0, c1 Counters) uint64 {
	return c1.TxPackets - c0.TxPackets + c1.TxDropped - c0.TxDropped
}

// windowWhileDeaf is sentWhileDeaf that sleeps for pause (if not 0)
// and runs a's engine once more, then takes out what local ACK timeouts
// sent again: each timeout, counted by a's device, goes back to the
// oldest unacknowledged PSN with the smallest window and so resends
// minWindow packets of those already out (TestWindowShrinksOnTimeout
// checks that count). It returns the packets a sent once, its window,
// and the timeouts.
func windowWhileDeaf(t *testing.T, a, b *end, n int, pause time.Duration) (window, timeouts uint64) {
	t.Helper()
	c0 := a.d.Counters()
	sentWhileDeaf(t, a, b, n)
	if pause > 0 {
		time.Sleep(pause)
		a.d.Progress()
	}
	c1 := a.d.Counters()
	sent, timeouts := released(c0, c1), c1.Timeouts-c0.Timeouts
	if resent := timeouts * minWindow; resent > sent {
		t.Fatalf("%d packets sent, fewer than the %d that %d timeouts resend", sent, resent, timeouts)
	}
	return sent - timeouts*minWindow, timeouts
}

// TestWindowOpensFully: a requester keeps its whole window in flight,
// more than one engine pass's budget of packets, on a fresh QP and after
// a loss-free transfer. A local ACK timeout while the peer is not
// listening (a loaded machine) adds resent packets, which do not count.
func TestWindowOpensFully(t *testing.T) {
	a, b := windowRig(t)
	const n = 8 << 20
	fill(a.buf[:n], 7)
	if got, timeouts := windowWhileDeaf(t, a, b, n, 0); got != initWindow {
		t.Fatalf("a fresh QP sent %d packets once (%d timeouts) before its first ACK, want its initial window %d",
			got, timeouts, initWindow)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "first write", b.buf[n:2*n], a.buf[:n])
	if got, timeouts := windowWhileDeaf(t, a, b, n, 0); got != maxWindow {
		t.Fatalf("after %d packets acknowledged without loss the QP sent %d packets once (%d timeouts) before an ACK, want %d",
			n/4096, got, timeouts, maxWindow)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "second write", b.buf[n:2*n], a.buf[:n])
}

// TestWindowCountsTimeouts: a local ACK timeout forced after the initial
// window is out (the peer not listening for longer than the timeout)
// leaves windowWhileDeaf with the initial window, as one on a loaded
// machine would in TestWindowOpensFully.
func TestWindowCountsTimeouts(t *testing.T) {
	a, b := windowRig(t)
	const n = 8 << 20
	fill(a.buf[:n], 9)
	// The rig's local ACK timeout is 4.096 us << 12, 16.8 ms.
	got, timeouts := windowWhileDeaf(t, a, b, n, 40*time.Millisecond)
	if timeouts == 0 || got != initWindow {
		t.Fatalf("%d timeouts, %d packets sent once, want at least one timeout and the initial window %d",
			timeouts, got, initWindow)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "write", b.buf[n:2*n], a.buf[:n])
}

// TestWindowShrinksOnTimeout: a local ACK timeout restarts with the
// smallest window, not with everything outstanding, so a path whose
// queue overflowed is not flooded again.
func TestWindowShrinksOnTimeout(t *testing.T) {
	a, b := windowRig(t)
	const n = 4 << 20
	fill(a.buf[:n], 8)
	first := sentWhileDeaf(t, a, b, n)
	c0 := a.d.Counters()
	deadline := time.Now().Add(testTimeout)
	for a.d.Counters().Timeouts == c0.Timeouts {
		if time.Now().After(deadline) {
			t.Fatal("no local ACK timeout")
		}
		a.d.Progress()
	}
	c1 := a.d.Counters()
	timeouts := c1.Timeouts - c0.Timeouts
	if sent := released(c0, c1); sent != timeouts*minWindow {
		t.Fatalf("after %d timeouts the QP sent %d packets again (of %d outstanding), want %d per timeout",
			timeouts, sent, first, minWindow)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "write", b.buf[n:2*n], a.buf[:n])
}
