package rc

import (
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// TestPassiveQPTakesRequesterAckTimeout: the QP the peer creates for an
// endpoint uses the local ACK timeout the endpoint's EPParams.Timeout
// asked for, not the default, so that the direction from the passive
// side (credit grants, AM replies, READ requests of a rendezvous)
// tolerates as long a silence of the requester before it fails as the
// requester's own direction does.
func TestPassiveQPTakesRequesterAckTimeout(t *testing.T) {
	_, _, a, b := openLoopIfaces(t)
	for _, timeout := range []time.Duration{0, 30 * time.Second} {
		ep, err := a.Connect(b.Address(), uct.EPParams{Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		want := ackTimeout(timeout)
		if timeout == 0 {
			want = ackTimeout(defaultTimeout)
		}
		if got := ep.(*Endpoint).qp.Query().Timeout; got != want {
			t.Errorf("Timeout %v: the endpoint's QP has ACK timeout %d, want %d", timeout, got, want)
		}
		var passive *verbs.QP
		b.mu.Lock()
		for qpn, pq := range b.passive {
			if qpn == ep.(*Endpoint).peerQPN {
				passive = pq.qp
			}
		}
		b.mu.Unlock()
		if passive == nil {
			t.Fatalf("Timeout %v: no passive QP %#x on the peer", timeout, ep.(*Endpoint).peerQPN)
		}
		if got := passive.Query().Timeout; got != want {
			t.Errorf("Timeout %v: the peer's QP has ACK timeout %d (4.096 µs · 2^%d per attempt), want %d", timeout, got, got, want)
		}
		if err := ep.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
