package verbs

import (
	"testing"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
)

// transferChecked runs one signaled RDMA WRITE (a to b) or READ (of b's
// memory into a) of n bytes and checks the data that arrived. The READ
// lands in two SGEs split off an MTU boundary, so that placed responses
// straddle them.
func transferChecked(t *testing.T, a, b *end, op WROpcode, id uint64, n int, devs ...*Device) {
	t.Helper()
	src, dst := a.buf[:n], b.buf[n:2*n]
	wr := SendWR{ID: id, Opcode: op, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, n)}, RemoteAddr: b.mr.Addr() + uint64(n), RKey: b.mr.RKey()}
	if op == WRRDMARead {
		src, dst = b.buf[:n], a.buf[n:2*n]
		cut := n/3 + 100
		wr.SG = []SGE{a.mr.SGE(n, cut), a.mr.SGE(n+cut, n-cut)}
		wr.RemoteAddr = b.mr.Addr()
	}
	fill(src, id)
	clear(dst)
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	wc := poll(t, a.cq, 1, devs...)[0]
	if wc.Status != WCSuccess {
		for _, d := range devs {
			t.Logf("counters %+v", d.Counters())
		}
	}
	checkWC(t, wc, id, WCSuccess, wcOpcodeOf(op))
	sameBytes(t, op.String(), dst, src)
}

// TestPlacedWriteRead: the middles of long WRITEs and READ responses are
// placed in the pass that checks their ICRC (Counters.RxPlaced), and
// the data that arrives is the data sent.
func TestPlacedWriteRead(t *testing.T) {
	const n = 1 << 20
	a, b := pair(t, rigOpts{bufSize: 2 * n, mtu: MTU4096, noWatchdog: true})
	middles := uint64(n/MTU4096.Bytes() - 2)
	for i, op := range []WROpcode{WRRDMAWrite, WRRDMARead} {
		recv := b.d
		if op == WRRDMARead {
			recv = a.d
		}
		before := recv.Counters()
		transferChecked(t, a, b, op, uint64(i+1), n, a.d, b.d)
		c := recv.Counters()
		// Packets that arrive out of sequence (a loss on a loaded host)
		// take the ordinary path; most must have been placed.
		if placed := c.RxPlaced - before.RxPlaced; placed < middles/2 {
			t.Fatalf("%v of %d bytes: %d packets placed while checked, want at least %d (counters %+v)", op, n, placed, middles/2, c)
		}
	}
}

// TestPlacedCorrupt: packets corrupted on the wire (an eBPF program
// flips a payload byte of some RoCE packets on the receiving link) that
// reach the placing path are dropped for their ICRC, and the WRITE or
// READ still delivers exactly the data sent once the requester
// retransmits: the bad bytes a corrupt middle left in the destination
// are overwritten by the good packet.
func TestPlacedCorrupt(t *testing.T) {
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	da, db := openIn(t, pair.A), openIn(t, pair.B)
	const n = 256 << 10
	o := rigOpts{bufSize: 2 * n, mtu: MTU4096}
	o.defaults()
	a, b := newEnd(t, da, o), newEnd(t, db, o)
	toRTS(t, a, b, o, 0, 0)
	toRTS(t, b, a, o, 0, 0)
	var id uint64
	// Byte 200 of the UDP payload: the payload of a middle (BTH only).
	cfg := fault.Config{Fraction: 0.1, OnlyUDPPort: 0, Corrupt: true, CorruptOffset: 200}
	for _, op := range []WROpcode{WRRDMAWrite, WRRDMARead} {
		ns, recv := pair.B, db // WRITE data arrives at B, READ responses at A
		if op == WRRDMARead {
			ns, recv = pair.A, da
		}
		var f *fault.Fault
		if err := ns.Do(func() error {
			f, err = fault.Attach(ns.Link(), fault.Ingress, cfg)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		before := recv.Counters()
		for i := 0; i < 20 && recv.Counters().RxICRCErrors == before.RxICRCErrors; i++ {
			id++
			transferChecked(t, a, b, op, id, n, da, db)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		c := recv.Counters()
		if c.RxICRCErrors == before.RxICRCErrors || c.RxPlaced == before.RxPlaced {
			t.Fatalf("%v: %d ICRC errors and %d placed packets in 20 transfers at 10%% corruption, want both > 0 (counters %+v)",
				op, c.RxICRCErrors-before.RxICRCErrors, c.RxPlaced-before.RxPlaced, c)
		}
		t.Logf("%v: %d corrupt packets dropped, %d placed, %d retransmissions", op,
			c.RxICRCErrors-before.RxICRCErrors, c.RxPlaced-before.RxPlaced, da.Counters().Retransmits+da.Counters().ReadRetries)
		// The data arrives intact with the fault removed too, from a
		// state the corrupt packets left.
		id++
		transferChecked(t, a, b, op, id, n, da, db)
	}
}
