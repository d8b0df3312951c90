package verbs

import "testing"

// TestAcksWhileReceiving: a responder that finds a 1 MiB WRITE (256
// packets at MTU 4096) waiting in its socket ACKs it as it goes, not
// once at the end of the pass: the requester's window then moves while
// the responder is still copying.
func TestAcksWhileReceiving(t *testing.T) {
	const n = 1 << 20
	a, b := pair(t, rigOpts{bufSize: 2 * n, mtu: MTU4096, noWatchdog: true})
	fill(a.buf[:n], 5)
	wr := SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, n)},
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	before := b.d.Counters()
	b.d.Progress() // every packet waits in the socket: one pass handles them
	c := b.d.Counters()
	rx, tx := c.RxPackets-before.RxPackets, c.TxPackets-before.TxPackets
	if rx != n/4096 {
		t.Skipf("one pass received %d of the WRITE's %d packets (a loaded machine): nothing to check", rx, n/4096)
	}
	if tx < 2 {
		t.Errorf("the responder handled %d packets in one pass and sent %d ACKs; want ACKs while it handles them", rx, tx)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	sameBytes(t, "written", b.buf[:n], a.buf[:n])
}
