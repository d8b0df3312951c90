package ucp

import (
	"testing"
)

// TestTagFragRC sends tag messages just above one eager fragment, up to
// and just above the largest sent eager in fragments, over rc between two
// network namespaces (the child echoes each). Those up to tagFragMax go
// eager in fragments: the lane takes them inside TagSend (a few
// fragments on an idle lane), so the request is done when TagSend
// returns; the one above takes the rendezvous, which completes only once
// the receiver's ATS arrived. Some sends leave before their
// echo's receive is posted, so fragments also assemble into unexpected
// messages. Every byte of every echo is checked.
func TestTagFragRC(t *testing.T) {
	nd := netnsWorld(t, "echo", Config{})
	ep := nd.eps[1]
	if ep.tagFragMax <= ep.bcopyMax || ep.tagFragMax < 32<<10 {
		t.Fatalf("rc lane: tag fragments up to %d, one fragment %d; want eager fragments above one, up to 32 KiB at least", ep.tagFragMax, ep.bcopyMax)
	}
	// One round trip first: the endpoint knows its peer's id, and sends
	// are no longer queued behind the wireup.
	warm := make([]byte, 9)
	r := nd.w.TagRecv(warm, mkTag(1, 299), exact, nil)
	nd.must(nd.wait(ep.TagSend(pattern(8, 1), mkTag(0, 299), nil)))
	nd.must(nd.wait(r))
	r.Release()
	sizes := []int{ep.bcopyMax + 1, 2*ep.bcopyMax + 7, 16 << 10, 32 << 10, ep.tagFragMax, ep.tagFragMax + 1}
	for i, n := range sizes {
		for _, early := range []bool{false, true} {
			out := pattern(n, byte(i))
			in := make([]byte, n+1)
			tag := mkTag(1, uint32(300+i))
			var r *Request
			if !early {
				r = nd.w.TagRecv(in, tag, exact, nil)
			}
			s := ep.TagSend(out, mkTag(0, uint32(300+i)), nil)
			if eager := n <= ep.tagFragMax; eager != s.Done() {
				t.Fatalf("size %d: done inside TagSend %v, want (eager) %v", n, s.Done(), eager)
			}
			nd.must(nd.wait(s))
			if early {
				r = nd.w.TagRecv(in, tag, exact, nil)
			}
			nd.must(nd.wait(r))
			checkTagRecv(t, r, tag, ep, in, out)
			r.Release()
			s.Release()
		}
	}
	nd.quit(1)
	nd.exitOK(1)
}
