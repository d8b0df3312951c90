package verbs

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// TestWatchdogProgresses: b's owner never runs the engine, so only b's
// watchdog receives a's WRITE and ACKs it, and a's WRITE completes; b's
// counters count the watchdog's passes.
func TestWatchdogProgresses(t *testing.T) {
	a, b := pair(t, rigOpts{})
	fill(a.buf[:4096], 3)
	for i := range 3 {
		wr := SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 4096)},
			RemoteAddr: b.mr.Addr() + uint64(i)*4096, RKey: b.mr.RKey()}
		if _, err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		checkWC(t, poll(t, a.cq, 1, a.d)[0], uint64(i), WCSuccess, WCRDMAWrite)
		b.d.Counters() // the engine mutex orders the watchdog's copy before the check
		sameBytes(t, "written", b.buf[i*4096:(i+1)*4096], a.buf[:4096])
	}
	if n := b.d.Counters().WatchdogRuns; n == 0 {
		t.Fatal("b's engine ran, but its counters show no pass of the watchdog")
	}
}

// TestWatchdogCloseEnds: Close stops the watchdog and the link watcher
// whether or not the watchdog has run or is running Progress; no
// goroutine is left behind.
func TestWatchdogCloseEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := range 20 {
		d, err := Open(Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})
		if err != nil {
			t.Fatal(err)
		}
		for range i {
			d.Progress()
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
	}
	// Close waits for its goroutines; only unrelated ones (the runtime's,
	// a finishing test's) may come and go, never 40 of ours.
	if n := runtime.NumGoroutine(); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after closing 20 devices:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestWatchdogTimerSetBySleeper: an owner that said it sleeps (Sleep),
// so that the watchdog watches the socket, then posts a WRITE to a peer
// that never answers and runs the engine no more: the watchdog still
// fires the WRITE's ACK timeout, which the owner's PostSend armed
// behind its back.
func TestWatchdogTimerSetBySleeper(t *testing.T) {
	a, b := pair(t, rigOpts{timeout: 8}) // 1 ms: the shortest ACK timeout (2^8 * 4.096 us)
	if !a.d.Sleep() {
		t.Fatal("no watchdog")
	}
	// Let the watchdog take the kick and settle in its watching mode.
	time.Sleep(20 * time.Millisecond)
	// The peer receives nothing, so never ACKs.
	if err := b.d.SetRDMADisabled(true); err != nil {
		t.Fatal(err)
	}
	wr := SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 64)},
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testTimeout); a.d.Counters().Timeouts == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the WRITE's ACK timeout never fired: counters %+v", a.d.Counters())
		}
		time.Sleep(time.Millisecond)
	}
}
