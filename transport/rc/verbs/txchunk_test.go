package verbs

import "testing"

// TestTxChunkWholeDatagrams: a long WRITE leaves in pieces of txChunk
// bytes (a MiB in two or three send calls) that end where a GSO datagram
// does, so at a 4096-byte MTU its packets go out 15 to a datagram, not
// with a short datagram at every piece boundary.
func TestTxChunkWholeDatagrams(t *testing.T) {
	const size = 1 << 20
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096, bufSize: size})
	if !a.d.sock.gso {
		t.Skip("no UDP GSO on this kernel: every packet is sent alone")
	}
	fill(a.buf[:size], 3)
	before := a.d.Counters()
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled,
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, size)}}); err != nil {
		t.Fatal(err)
	}
	a.d.Progress()
	c := a.d.Counters()
	pkts, dgrams, calls := c.TxPackets-before.TxPackets, c.TxDatagrams-before.TxDatagrams, c.TxCalls-before.TxCalls
	// A middle packet: BTH, 4096 bytes of payload, ICRC.
	perDgram := uint64(gsoMaxLen / (12 + 4096 + 4))
	if pkts != size/4096 {
		t.Fatalf("the WRITE left as %d packets, want %d", pkts, size/4096)
	}
	// The first packet carries a RETH and is larger than the rest: a
	// datagram of its own.
	if want := 1 + (pkts-1+perDgram-1)/perDgram; dgrams > want {
		t.Errorf("%d packets left in %d datagrams (%d send calls), want at most %d", pkts, dgrams, calls, want)
	}
	// Pieces of txChunk (512 KiB): a MiB in two send calls, three if the
	// tail of a datagram spills past the second piece.
	if calls > 3 {
		t.Errorf("a MiB left in %d send calls, want at most 3", calls)
	}
	t.Logf("%d packets, %d datagrams, %d send calls", pkts, dgrams, calls)
	for i, wc := range poll(t, a.cq, 1, a.d, b.d) {
		checkWC(t, wc, uint64(i+1), WCSuccess, WCRDMAWrite)
	}
	sameBytes(t, "written", b.buf[:size], a.buf[:size])
}
