package ucp

import "testing"

// TestTagFragOneDatagram sends a 32 KiB tag message, which goes eager in
// fragments, over rc between two network namespaces and counts the
// UDP datagrams its fragments leave in: every fragment but the last fills
// whole packets of the path MTU (fragAlign), so the device sends all in
// one GSO datagram. Fragments cut at the lane's full bcopy size take more:
// the first fragment's short last packet ends a GSO datagram. The echoes
// are checked byte for byte.
func TestTagFragOneDatagram(t *testing.T) {
	nd := netnsWorld(t, "echo", Config{})
	ep := nd.eps[1]
	const n = 32 << 10
	if ep.tagFragMax < n || ep.bcopyMax >= n {
		t.Fatalf("rc lane: tag fragments up to %d, one fragment %d; want %d in fragments", ep.tagFragMax, ep.bcopyMax, n)
	}
	at := ep.lanes[ep.amLane].attr
	if at.AMBcopyAlign <= 0 {
		t.Fatalf("rc lane gives no AMBcopyAlign")
	}
	warm := make([]byte, 9)
	r := nd.w.TagRecv(warm, mkTag(1, 400), exact, nil)
	nd.must(nd.wait(ep.TagSend(pattern(8, 1), mkTag(0, 400), nil)))
	nd.must(nd.wait(r))
	r.Release()
	// A datagram of anything else (the deferred ACK of an echo, which
	// leaves once a pass finds the socket empty) may join the count of
	// one message; of three messages, one must go alone in one datagram.
	best := uint64(1 << 62)
	mtu := at.AMBcopyAlign
	for k := range 3 {
		for range 100 {
			nd.w.Progress()
		}
		out := pattern(n, byte(7+k))
		in := make([]byte, n)
		tag := mkTag(1, uint32(401+k))
		r := nd.w.TagRecv(in, tag, exact, nil)
		before := rcCounters(nd.ctx)
		s := ep.TagSend(out, mkTag(0, uint32(401+k)), nil)
		// Progress until the batch went out (the doorbell rings at the
		// start of an engine pass, or the device's background pass
		// sends it).
		after := rcCounters(nd.ctx)
		for i := 0; i < 100000 && after.TxPackets == before.TxPackets; i++ {
			nd.w.Progress()
			after = rcCounters(nd.ctx)
		}
		pkts, dgrams := after.TxPackets-before.TxPackets, after.TxDatagrams-before.TxDatagrams
		t.Logf("%d packets, %d datagrams", pkts, dgrams)
		if want := uint64(n/mtu + 1); pkts < want {
			t.Fatalf("%d packets sent, want at least %d (MTU %d)", pkts, want, mtu)
		}
		best = min(best, dgrams)
		nd.must(nd.wait(s))
		nd.must(nd.wait(r))
		checkTagRecv(t, r, tag, ep, in, out)
		r.Release()
	}
	if best != 1 {
		t.Errorf("the fragments of a %d-byte message left in %d datagrams at best, want one", n, best)
	}
	nd.quit(1)
	nd.exitOK(1)
}
