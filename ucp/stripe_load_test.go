package ucp

import (
	"bytes"
	"testing"
)

// rndvBurst* shape the rndvburst role's messages: rndvBurstN
// rendezvous messages of rndvBurstSize bytes, all in flight at once.
const (
	rndvBurstN    = 8
	rndvBurstSize = 256 << 10
	tagBurstGo    = 0x7f0
	tagBurst      = 0x7f1
	tagBurstSent  = 0x7f2
)

func init() {
	// rndvburst: on a tagBurstGo message send rank 0 rndvBurstN messages
	// of rndvBurstSize bytes (message i: pattern seed i+1), all in
	// flight at once, and a one-byte tagBurstSent message behind them,
	// then wait for tagQuit.
	childRoles["rndvburst"] = func(nd *node) error {
		if err := nd.wait(nd.w.TagRecv(nil, mkTag(0, tagBurstGo), exact, nil)); err != nil {
			return err
		}
		var reqs []*Request
		for i := 0; i < rndvBurstN; i++ {
			reqs = append(reqs, nd.eps[0].TagSend(pattern(rndvBurstSize, byte(i+1)), mkTag(nd.rank, tagBurst), nil))
		}
		// behind the announcements on the ordered tag lane
		reqs = append(reqs, nd.eps[0].TagSend([]byte{1}, mkTag(nd.rank, tagBurstSent), nil))
		for _, r := range reqs {
			if err := nd.wait(r); err != nil {
				return err
			}
		}
		return nd.waitQuit()
	}
}

// laneLoads returns, for each of ep's lanes, the transfers it took whole
// as a rail and the bytes counted in flight on it.
func laneLoads(ep *Endpoint) (wholes []uint64, xbytes []int) {
	ep.w.lock()
	defer ep.w.unlock()
	for i := range ep.lanes {
		wholes = append(wholes, ep.lanes[i].wholes)
		xbytes = append(xbytes, ep.lanes[i].xbytes)
	}
	return wholes, xbytes
}

// Two rails with transfers queued on both: a Get posted while every rail
// has at least its size in flight goes whole on the least loaded rail,
// alternating between them; while a rail has less it is striped. Every
// Get moves the right bytes, the loads return to zero once all
// completed, and a lone Get afterwards is striped again.
func TestRailsBusyRailTakesWhole(t *testing.T) {
	nd, _ := railsWorld(t, 2, "rma", Config{StripeAlways: true})
	ep := nd.eps[1]
	if len(ep.rails) != 2 {
		t.Fatalf("rails %v, want 2", ep.rails)
	}
	keys := recvKeys(t, nd, 1)
	reg := keys[0]
	want := pattern(1<<20, 5) // the rma child's registered memory
	const size, n = 256 << 10, 8
	chunks0 := laneChunks(ep)
	wholes0, _ := laneLoads(ep)
	bufs := make([][]byte, n)
	reqs := make([]*Request, n)
	for i := range reqs {
		bufs[i] = make([]byte, size)
		off := (i % 4) * size
		reqs[i] = ep.Get(bufs[i], reg.addr+uint64(off), reg.key, nil)
	}
	// posted with no progress in between: the first two find a rail with
	// less than 256 KiB in flight and are striped (128 KiB per rail, then
	// 256 KiB), the other six go whole, three per rail
	chunks1 := laneChunks(ep)
	wholes1, load := laneLoads(ep)
	checkSplit(t, ep, "Gets", chunks0, chunks1, wholes0, wholes1)
	for _, li := range ep.rails {
		if load[li] != 4*size {
			t.Errorf("lane %d: %d bytes in flight, want %d", li, load[li], 4*size)
		}
	}
	for i, r := range reqs {
		nd.must(nd.wait(r))
		off := (i % 4) * size
		if !bytes.Equal(bufs[i], want[off:off+size]) {
			t.Fatalf("get %d: content differs", i)
		}
		r.Release()
	}
	if _, load := laneLoads(ep); load[ep.rails[0]] != 0 || load[ep.rails[1]] != 0 {
		t.Fatalf("bytes in flight per lane %v after every Get completed, want none", load)
	}
	before := laneChunks(ep)
	in := make([]byte, 1<<20)
	nd.must(nd.wait(ep.Get(in, reg.addr, reg.key, nil)))
	if !bytes.Equal(in, want) {
		t.Fatal("lone get: content differs")
	}
	if after := laneChunks(ep); !chunksGrew(before, after) {
		t.Fatalf("lone get: chunks per lane %v -> %v, want both rails", before, after)
	}
	nd.quit(1)
	nd.exitOK(1)
}

// Two rails, rendezvous GETs: rndvBurstN announced messages, received
// with no progress in between, make the receiver's GETs pile up on both
// rails: the first two find a rail with less than their size in flight
// and are striped, the others go whole, alternating between the rails,
// with the rail's key of the sender's bundle. Every message arrives
// intact and the loads return to zero.
func TestRailsBusyRailTakesWholeRndv(t *testing.T) {
	nd, _ := railsWorld(t, 2, "rndvburst", Config{StripeAlways: true})
	ep := nd.eps[1]
	if len(ep.rails) != 2 {
		t.Fatalf("rails %v, want 2", ep.rails)
	}
	nd.must(nd.wait(ep.TagSend(nil, mkTag(0, tagBurstGo), nil)))
	// once the message sent behind them is here, so are the
	// announcements, waiting unexpected
	var one [1]byte
	nd.must(nd.wait(nd.w.TagRecv(one[:], mkTag(1, tagBurstSent), exact, nil)))
	chunks0 := laneChunks(ep)
	wholes0, _ := laneLoads(ep)
	bufs := make([][]byte, rndvBurstN)
	reqs := make([]*Request, rndvBurstN)
	for i := range reqs {
		bufs[i] = make([]byte, rndvBurstSize)
		reqs[i] = nd.w.TagRecv(bufs[i], mkTag(1, tagBurst), exact, nil)
	}
	chunks1 := laneChunks(ep)
	wholes1, _ := laneLoads(ep)
	checkSplit(t, ep, "GETs", chunks0, chunks1, wholes0, wholes1)
	for i, r := range reqs {
		nd.must(nd.wait(r))
		// messages with one tag from one sender match in order
		if !bytes.Equal(bufs[i], pattern(rndvBurstSize, byte(i+1))) {
			t.Fatalf("message %d: content differs", i)
		}
	}
	_, load := laneLoads(ep)
	for _, li := range ep.rails {
		if load[li] != 0 {
			t.Errorf("lane %d: %d bytes in flight after every message arrived, want none", li, load[li])
		}
	}
	nd.quit(1)
	nd.exitOK(1)
}

// checkSplit checks that, between the counts before (0) and after (1),
// each rail of ep carried two striped chunks and three whole transfers
// of what (Gets, GETs).
func checkSplit(t *testing.T, ep *Endpoint, what string, chunks0, chunks1, wholes0, wholes1 []uint64) {
	t.Helper()
	for _, li := range ep.rails {
		if got := chunks1[li] - chunks0[li]; got != 2 {
			t.Errorf("lane %d: %d chunks of striped %s, want 2 (chunks %v -> %v)", li, got, what, chunks0, chunks1)
		}
		if got := wholes1[li] - wholes0[li]; got != 3 {
			t.Errorf("lane %d: %d whole %s, want 3 (wholes %v -> %v)", li, got, what, wholes0, wholes1)
		}
	}
}
