package rc

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func TestCMHandshake(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	released := make(chan uint32, 4)
	s, err := listenCM(lo, func(req cmMsg) (cmMsg, func(), error) {
		if req.DstNonce != 77 {
			return cmMsg{}, nil, uct.ErrInvalidAddress
		}
		qpn := req.QPN + 1
		return cmMsg{Type: cmREP, QPN: qpn, PSN: 5, MTU: req.MTU, Nonce: 77, Window: 64},
			func() { released <- qpn }, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	peer := netip.AddrPortFrom(lo, s.Port())
	req := cmMsg{Type: cmREQ, GID: lo, UDPPort: 4791, QPN: 10, PSN: 3, MTU: 1024, Nonce: 1, DstNonce: 77, Window: 128, AckTimeout: 15}

	// A REQ is answered; DREQ releases the passive side.
	c, rep, err := cmDial(context.Background(), peer, req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Type != cmREP || rep.QPN != 11 || rep.MTU != 1024 || rep.Window != 64 {
		t.Fatalf("REP %+v", rep)
	}
	if _, err := c.Write((&cmMsg{Type: cmDREQ, QPN: 11}).encode()); err != nil {
		t.Fatal(err)
	}
	if q := <-released; q != 11 {
		t.Fatalf("released %d, want 11", q)
	}
	c.Close()

	// The requester vanishing releases it too.
	req.QPN = 20
	c, _, err = cmDial(context.Background(), peer, req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if q := <-released; q != 21 {
		t.Fatalf("released %d, want 21", q)
	}

	// A stale nonce is refused as an invalid address.
	req.DstNonce = 78
	if _, _, err := cmDial(context.Background(), peer, req, 5*time.Second); !errors.Is(err, uct.ErrInvalidAddress) {
		t.Fatalf("stale nonce: %v, want ErrInvalidAddress", err)
	}

	// Server close releases live connections and refuses new ones.
	req.DstNonce, req.QPN = 77, 30
	c, _, err = cmDial(context.Background(), peer, req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if q := <-released; q != 31 {
		t.Fatalf("released %d, want 31", q)
	}
	if _, _, err := cmDial(context.Background(), peer, req, 5*time.Second); !errors.Is(err, uct.ErrUnreachable) {
		t.Fatalf("dial after close: %v, want ErrUnreachable", err)
	}
}
