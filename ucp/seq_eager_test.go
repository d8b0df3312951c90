package ucp

import (
	"bytes"
	"testing"

	"github.com/ucgo/ucgo/failover"
)

// TestSeqEagerRequestResponse: in request and response traffic over a
// sequenced endpoint each message finds the previous one acknowledged,
// so the sender's log holds only the message in flight and every
// message is written into the same cell; the messages arrive whole and
// in order on both sides, with and without requests, short and by copy.
func TestSeqEagerRequestResponse(t *testing.T) {
	p := newPingPong(t, Config{ErrorMode: ErrorModePeer, Failover: failover.Policy{Mode: failover.AnyTransport}})
	for i, ep := range p.eps {
		if ep.fo == nil {
			t.Fatalf("endpoint %d has no sequenced channel", i)
		}
	}
	cell := [2][]byte{}
	for round := 0; round < 200; round++ {
		for i := range 2 {
			from, to := p.ws[i], p.ws[1-i]
			// short messages, and every tenth one by copy
			n := 8 + round%5
			if round%10 == 9 {
				n = 1000
			}
			out := bytes.Repeat([]byte{byte(round), byte(i)}, n/2)
			in := make([]byte, len(out))
			tag := uint64(round)<<8 | uint64(i)
			r := to.TagRecv(in, tag, exact, nil)
			var s *Request
			if round%2 == 0 {
				s = p.eps[i].TagSend(out, tag, nil)
			} else {
				s = p.eps[i].TagSend(out, tag, &Params{UserData: round})
			}
			driveAll(t, []*Worker{from, to}, r, s)
			if r.Err() != nil || s.Err() != nil {
				t.Fatalf("round %d from %d: recv %v, send %v", round, i, r.Err(), s.Err())
			}
			if info := r.Info(); info.Tag != tag || !bytes.Equal(in[:info.Length], out) {
				t.Fatalf("round %d from %d: got tag %x, %d bytes, want tag %x, %d bytes", round, i, info.Tag, info.Length, tag, len(out))
			}
			r.Release()
			s.Release()
			f := p.eps[i].fo
			if round == 0 && i == 0 {
				continue // the peer has not answered the message that connected yet
			}
			if f.log.Len() > 1 {
				t.Fatalf("round %d from %d: the log holds %d messages, want only the one in flight", round, i, f.log.Len())
			}
			b, ok := f.log.Get(f.log.Next() - 1)
			if !ok {
				t.Fatalf("round %d from %d: the message in flight is not in the log", round, i)
			}
			switch {
			case n > seqCell-seqEagerHdr:
				cell[i] = nil // its buffer leaves the cell when acknowledged
			case cell[i] != nil && &b[0] != &cell[i][0]:
				t.Fatalf("round %d from %d: the message took another cell of the log than the previous one", round, i)
			default:
				cell[i] = b
			}
		}
	}
}
