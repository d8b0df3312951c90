package rc

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/uct"
)

// finishWithin progresses p's iface and calls c.Finish until it returns
// something other than ErrInProgress, or d passes (then ErrInProgress);
// it also returns how many times it called Finish.
func finishWithin(p *peer, c uct.Connecting, d time.Duration) (uct.Endpoint, int, error) {
	calls := 0
	for stop := time.Now().Add(d); ; {
		ep, err := c.Finish()
		calls++
		if err != uct.ErrInProgress || time.Now().After(stop) {
			return ep, calls, err
		}
		p.it.Progress()
		time.Sleep(time.Millisecond)
	}
}

// startIn calls StartConnect from p's namespace A, where the iface is.
func startIn(p *peer) (uct.Connecting, error) {
	var c uct.Connecting
	err := p.pair.A.Do(func() (err error) {
		c, err = p.it.StartConnect(p.addr, uct.EPParams{Timeout: 20 * time.Second})
		return err
	})
	return c, err
}

// TestStartConnect: StartConnect returns before the peer answers; Finish
// then gives a working endpoint. Towards a path that carries nothing
// (every IPv4 packet dropped, the connection manager's too) Finish keeps
// answering ErrInProgress at once, Cancel abandons the connection, and an
// iface closed with a connection still pending closes cleanly.
func TestStartConnect(t *testing.T) {
	p := startPeer(t, 20*time.Second)
	c, err := startIn(p)
	if err != nil {
		t.Fatal(err)
	}
	ep, _, err := finishWithin(p, c, 30*time.Second)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if _, err := c.Finish(); !errors.Is(err, uct.ErrCanceled) {
		t.Errorf("Finish after the endpoint: %v, want ErrCanceled", err)
	}
	msg := []byte("over the started connection")
	p.echoCheck("AM over the new endpoint", msg, func() error { _, err := ep.AMBcopy(amEcho, msg, nil); return err })
	if err := ep.Close(); err != nil {
		t.Errorf("close the new endpoint: %v", err)
	}

	var f *fault.Fault
	err = p.pair.B.Do(func() (err error) {
		f, err = fault.Drop(p.pair.B.Link(), fault.Config{AllIPv4: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	c, err = startIn(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, calls, err := finishWithin(p, c, time.Second); err != uct.ErrInProgress {
		t.Fatalf("Finish towards a black hole: %v after %d calls, want ErrInProgress", err, calls)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("StartConnect and a second of Finish calls took %v: something waited for the peer", el)
	}
	c.Cancel()
	c.Cancel()
	if _, err := c.Finish(); !errors.Is(err, uct.ErrCanceled) {
		t.Errorf("Finish after Cancel: %v, want ErrCanceled", err)
	}
	// one more left pending: Close cancels it, and its QP no longer
	// holds the iface's completion queue
	if _, err := startIn(p); err != nil {
		t.Fatal(err)
	}
	// the pending connection still sends: a packet may be between the
	// program's two counts, so the snapshot is taken again until both
	// agree (bounded)
	seen, dropped := f.Counters()
	for i := 0; i < 50 && seen != dropped; i++ {
		time.Sleep(10 * time.Millisecond)
		seen, dropped = f.Counters()
	}
	if dropped == 0 || dropped != seen {
		t.Errorf("the fault saw %d packets and dropped %d", seen, dropped)
	}
	if p.ep != nil {
		p.ep.Close()
		p.ep = nil
	}
	if err := p.it.Close(); err != nil {
		t.Fatalf("close the iface with a connection pending: %v", err)
	}
}
