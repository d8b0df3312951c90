package verbs

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestPostBurstOneSendmmsg: WRITEs posted one PostSend at a time, with no
// engine pass between them, leave together with the next pass: one
// sendmmsg (GSO-merged to the one peer QP), not one per post.
func TestPostBurstOneSendmmsg(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096})
	const n, size = 16, 4096
	fill(a.buf[:n*size], 3)
	before := a.d.Counters()
	for i := 0; i < n; i++ {
		if _, err := a.qp.PostSend(SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled,
			RemoteAddr: b.mr.Addr() + uint64(i*size), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(i*size, size)}}); err != nil {
			t.Fatal(err)
		}
	}
	a.d.Progress()
	c := a.d.Counters()
	if sent, calls := c.TxPackets-before.TxPackets, c.TxCalls-before.TxCalls; sent != n || calls != 1 {
		t.Fatalf("%d posts then one engine pass: %d packets in %d sendmmsg calls, want %d in 1", n, sent, calls, n)
	}
	for i, wc := range poll(t, a.cq, n, a.d, b.d) {
		checkWC(t, wc, uint64(i), WCSuccess, WCRDMAWrite)
	}
	sameBytes(t, "written", b.buf[:n*size], a.buf[:n*size])
}

// TestPostThenWaitSends: work posted and then only waited for, without an
// explicit engine pass, still leaves: through a completion channel's
// GetCQEvent, through Device.Wait (NextTimeout is zero while posts wait)
// and through Sleep, and before a QP moves to ERR.
func TestPostThenWaitSends(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true})
	ch, err := a.d.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	cq, err := a.d.CreateCQ(64, ch)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	// The peer drives its own engine, as another process would.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b.d.Progress()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	write := func(id uint64) {
		t.Helper()
		if _, err := a.qp.PostSend(SendWR{ID: id, Opcode: WRRDMAWrite, Flags: SendSignaled,
			RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, 2048)}}); err != nil {
			t.Fatal(err)
		}
	}

	// GetCQEvent: on a QP of its own whose send CQ has the channel.
	o := rigOpts{noWatchdog: true}
	o.defaults()
	qp, err := a.pd.CreateQP(QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer qp.Close()
	peer := newEnd(t, b.d, o)
	toRTS(t, &end{d: a.d, qp: qp}, peer, o, 0, 0)
	toRTS(t, peer, &end{d: a.d, qp: qp}, o, 0, 0)
	if err := cq.ReqNotify(false); err != nil {
		t.Fatal(err)
	}
	if _, err := qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled,
		RemoteAddr: peer.mr.Addr(), RKey: peer.mr.RKey(), SG: []SGE{a.mr.SGE(0, 2048)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.GetCQEvent(ctx); err != nil {
		t.Fatalf("GetCQEvent after a post: %v", err)
	}
	var wc [1]WC
	if cq.PollNoProgress(wc[:]) != 1 {
		t.Fatal("a CQ event without a completion")
	}
	checkWC(t, wc[0], 1, WCSuccess, WCRDMAWrite)

	// Device.Wait, then Progress, as its documentation asks.
	write(2)
	if nt := a.d.NextTimeout(); nt != 0 {
		t.Fatalf("NextTimeout %v with a post waiting, want 0", nt)
	}
	for a.cq.PollNoProgress(wc[:]) == 0 {
		if err := a.d.Wait(ctx); err != nil {
			t.Fatalf("no completion of a post followed by Wait: %v", err)
		}
		a.d.Progress()
	}
	checkWC(t, wc[0], 2, WCSuccess, WCRDMAWrite)

	// Sleep sends what waits before the caller sleeps.
	write(3)
	sent := a.d.Counters().TxPackets
	a.d.Sleep()
	if a.d.Counters().TxPackets == sent {
		t.Fatal("Sleep left a post unsent")
	}
	checkWC(t, poll(t, a.cq, 1, a.d)[0], 3, WCSuccess, WCRDMAWrite)

	// A QP that moves to ERR sends what was posted before.
	write(4)
	sent = a.d.Counters().TxPackets
	if err := a.qp.Modify(&QPAttr{State: QPSErr}, QPAttrState); err != nil {
		t.Fatal(err)
	}
	if a.d.Counters().TxPackets == sent {
		t.Fatal("a move to ERR dropped a post unsent")
	}
}

// TestPostedMemoryReusable: the memory a posted SEND or WRITE names may be
// changed as soon as PostSend has returned, although its packets leave
// later: a small message is copied into the batch, a large one leaves
// before PostSend returns. A ping-pong that stamps a sequence number into
// its source buffer before every post relies on it.
func TestPostedMemoryReusable(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096})
	for i, size := range []int{4096, postCopyMax, postCopyMax + 1, 64 << 10} {
		want := make([]byte, size)
		fill(a.buf[:size], uint64(10+i))
		copy(want, a.buf[:size])
		if _, err := a.qp.PostSend(SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled,
			RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(0, size)}}); err != nil {
			t.Fatal(err)
		}
		fill(a.buf[:size], uint64(100+i)) // the next message, before any engine pass
		checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], uint64(i), WCSuccess, WCRDMAWrite)
		sameBytes(t, fmt.Sprintf("%d bytes written", size), b.buf[:size], want)
	}
}
