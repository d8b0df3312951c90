package verbs

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
)

// TestTimeoutProbeStarvedResponder: a responder whose engine does not run
// for longer than the local ACK timeout (a process descheduled on a
// loaded host) loses nothing; the requester's timeout then re-sends only
// the newest packet, asking for an ACK, not the whole window, and the
// responder, once it runs, acknowledges everything with the originals.
func TestTimeoutProbeStarvedResponder(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU1024})
	const pkts = 64
	fill(a.buf[:pkts*1024], 7)
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled,
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, pkts*1024)}}); err != nil {
		t.Fatal(err)
	}
	// Only the requester runs until its ACK timer fires once.
	deadline := time.Now().Add(testTimeout)
	for a.d.Counters().Timeouts == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no ACK timeout")
		}
		a.d.Progress()
		time.Sleep(time.Millisecond)
	}
	c := a.d.Counters()
	if c.TxPackets != pkts+1 || c.Probes != 1 || c.Retransmits != 0 {
		t.Fatalf("after the first timeout the requester sent %d packets (%d probes, %d go-back-N restarts); want %d, 1, 0",
			c.TxPackets, c.Probes, c.Retransmits, pkts+1)
	}
	wc := poll(t, a.cq, 1, a.d, b.d)
	checkWC(t, wc[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "written", b.buf[:pkts*1024], a.buf[:pkts*1024])
	if got := b.d.Counters().DuplicatesRcvd; got != c.Probes {
		t.Errorf("responder counted %d duplicates, want %d (the probes)", got, c.Probes)
	}
}

// TestTimeoutProbeTailLoss: when the tail of a message is really lost
// (here every packet, dropped by an eBPF program on the responder's
// link), the probe arrives out of sequence, the responder answers with a
// PSN sequence error NAK and the requester goes back to the first lost
// packet: the loss is repaired after one timeout.
func TestTimeoutProbeTailLoss(t *testing.T) {
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	var da, db *Device
	if err := pair.A.Do(func() error {
		da, err = Open(Config{Addr: pair.A.Addr(), ProgressInterval: -1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { da.Close() })
	if err := pair.B.Do(func() error {
		db, err = Open(Config{Addr: pair.B.Addr(), ProgressInterval: -1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// 268 ms per attempt: the NAK comes back long before a second
	// timeout even on a loaded machine.
	o := rigOpts{bufSize: 64 << 10, mtu: MTU1024, timeout: 16}
	o.defaults()
	a, b := newEnd(t, da, o), newEnd(t, db, o)
	toRTS(t, a, b, o, 100, 200)
	toRTS(t, b, a, o, 200, 100)
	qpn := b.qp.QPNum()
	var f *fault.Fault
	if err := pair.B.Do(func() error {
		f, err = fault.Drop(pair.B.Link(), fault.Config{Fraction: 1, OnlyUDPPort: fault.RoCEv2Port, OnlyDestQPN: &qpn})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const pkts = 40
	fill(a.buf[:pkts*1024], 9)
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled,
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, pkts*1024)}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testTimeout)
	for da.Counters().TxPackets < pkts {
		if time.Now().After(deadline) {
			t.Fatalf("the requester sent %d packets, want %d", da.Counters().TxPackets, pkts)
		}
		da.Progress()
	}
	// Everything sent was lost; what comes next gets through.
	if err := f.Set(fault.Config{}); err != nil {
		t.Fatal(err)
	}
	wc := poll(t, a.cq, 1, da, db)
	checkWC(t, wc[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "written", b.buf[:pkts*1024], a.buf[:pkts*1024])
	ca, cb := da.Counters(), db.Counters()
	if ca.Probes < 1 || cb.SeqNAKsSent < 1 || ca.SeqNAKsRcvd < 1 {
		t.Errorf("requester %+v, responder %+v: want the timeout's probe answered by a sequence error NAK", ca, cb)
	}
	if ca.Timeouts != ca.Probes {
		t.Errorf("%d timeouts, %d probes: a timeout went back without probing first", ca.Timeouts, ca.Probes)
	}
}
