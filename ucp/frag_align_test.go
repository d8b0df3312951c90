package ucp

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// TestTagFragOneDatagram sends a 32 KiB tag message, which goes eager in
// fragments, over rc between two network namespaces and counts the
// UDP datagrams its fragments leave in: every fragment but the last fills
// whole packets of the path MTU (fragAlign), so the device sends all in
// one GSO datagram. Fragments cut at the lane's full bcopy size take more:
// the first fragment's short last packet ends a GSO datagram. The echoes
// are checked byte for byte.
//
// A send is counted only when nothing else can have left with it: the
// device had no deferred ACK (rcQuiet), received nothing until the
// message was out, dropped and retransmitted nothing, and sent it in one
// batch (the device's background pass may ring the doorbell between two
// fragments' posts, and the fragments then leave in two).
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
	const counted, tries = 3, 30
	mtu := at.AMBcopyAlign
	clean := 0
	for k := 0; clean < counted; k++ {
		if k == tries {
			t.Fatalf("%d of %d sends had nothing else leave with them, want %d", clean, tries, counted)
		}
		out := pattern(n, byte(7+k))
		in := make([]byte, n)
		tag := mkTag(1, uint32(401+k))
		r := nd.w.TagRecv(in, tag, exact, nil)
		before := rcQuiet(t, nd)
		s := ep.TagSend(out, mkTag(0, uint32(401+k)), nil)
		// The pass rings the doorbell for the fragments still posted.
		nd.w.Progress()
		after := rcCounters(nd.ctx)
		nd.must(nd.wait(s))
		nd.must(nd.wait(r))
		checkTagRecv(t, r, tag, ep, in, out)
		r.Release()
		pkts, dgrams := after.TxPackets-before.TxPackets, after.TxDatagrams-before.TxDatagrams
		calls, rx := after.TxCalls-before.TxCalls, after.RxPackets-before.RxPackets
		lost := after.TxDropped - before.TxDropped + after.Retransmits - before.Retransmits
		t.Logf("%d packets, %d datagrams, %d sendmmsg calls; %d packets received, %d dropped or retransmitted", pkts, dgrams, calls, rx, lost)
		if calls != 1 || rx != 0 || lost != 0 {
			continue
		}
		clean++
		if want := uint64(n/mtu + 1); pkts < want {
			t.Fatalf("%d packets sent, want at least %d (MTU %d)", pkts, want, mtu)
		}
		if dgrams != 1 {
			t.Errorf("the fragments of a %d-byte message left in %d datagrams, want one", n, dgrams)
		}
	}
	nd.quit(1)
	nd.exitOK(1)
}

// rcQuiet progresses nd's worker until a pass of its rc devices receives
// nothing, finds their sockets empty and sends nothing, and returns their
// counters then. Such a pass sends any deferred ACK (one is released when
// a pass finds the socket empty), so none waits afterwards, and a new one
// needs a received packet first.
func rcQuiet(t *testing.T, nd *node) verbs.Counters {
	t.Helper()
	c := rcCounters(nd.ctx)
	for deadline := time.Now().Add(10 * time.Second); ; {
		nd.w.Progress()
		d := rcCounters(nd.ctx)
		if d.TxPackets == c.TxPackets && d.RxPackets == c.RxPackets && d.RxEmpty > c.RxEmpty {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("rc devices not quiet after 10s: %+v", d)
		}
		c = d
	}
}
