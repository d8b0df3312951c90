package ucp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func TestRetryLater(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{uct.ErrNoResource, true},
		{uct.NewOpError("rc", "am_bcopy", "x", uct.ErrRouteLost, errors.New("link of veth0 is down")), true},
		{uct.NewOpError("rc", "am_bcopy", "x", uct.ErrLocalNICFailed, nil), false},
		{uct.NewOpError("rc", "am_bcopy", "x", uct.ErrEndpointTimeout, nil), false},
	} {
		if got := retryLater(c.err); got != c.want {
			t.Errorf("retryLater(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestLinkFlapRC: rank 0's link goes down for 200 ms while it sends tag
// messages (eager and rendezvous) to an echoing peer, in peer error mode
// with no other lane to fail over to. The link's return is transient:
// posts refused with uct.ErrRouteLost wait in the endpoint's queue,
// packets lost in flight are retransmitted, the endpoint never fails and
// every message comes back once, in order.
func TestLinkFlapRC(t *testing.T) {
	nd := tlsWorld(t, "rc", 2, "echo", Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1}, EnvErrMode+"=peer")
	ep := nd.eps[1]
	const n = 90
	sizes := []int{8, 3000, 70000}
	var outs, ins [][]byte
	var sends, recvs []*Request
	for i := 0; i < n; i++ {
		b := pattern(sizes[i%len(sizes)], byte(i))
		binary.LittleEndian.PutUint64(b, uint64(i))
		outs = append(outs, b)
		ins = append(ins, make([]byte, len(b)))
		recvs = append(recvs, nd.w.TagRecv(ins[i], mkTag(1, tagData), exact, nil))
	}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			sends = append(sends, ep.TagSend(outs[i], mkTag(0, tagData), nil))
			nd.w.Progress()
		}
	}
	send(0, n/3)
	nd.must(nd.star.NS[0].SetLink(false))
	send(n/3, 2*n/3)
	until := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(until) {
		nd.w.Progress()
		time.Sleep(100 * time.Microsecond)
	}
	if err := ep.Err(); err != nil {
		t.Fatalf("endpoint failed while its link was down: %v (remedy %v)", err, uct.RemedyOf(err))
	}
	nd.must(nd.star.NS[0].SetLink(true))
	send(2*n/3, n)
	for i := 0; i < n; i++ {
		if err := nd.wait(sends[i]); err != nil {
			t.Fatalf("send %d: %v (remedy %v)", i, err, uct.RemedyOf(err))
		}
		if err := nd.wait(recvs[i]); err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if !bytes.Equal(ins[i], outs[i]) {
			t.Fatalf("echo %d (%d bytes) differs: sequence %d", i, len(outs[i]), binary.LittleEndian.Uint64(ins[i]))
		}
	}
	if err := ep.Err(); err != nil {
		t.Fatalf("endpoint error after the flap: %v", err)
	}
	nd.quit(1)
}
