package shm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

type cancelReq struct {
	dispatched int
	canceled   []error
}

func (r *cancelReq) Dispatch() error         { r.dispatched++; return nil }
func (r *cancelReq) CancelPending(err error) { r.canceled = append(r.canceled, err) }

func TestDeviceDisabled(t *testing.T) {
	_, a := openIface(t)
	_, b := openIface(t)
	ep, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()

	var seen []uct.DeviceStatusEvent
	w, err := a.WatchDevice(func(e uct.DeviceStatusEvent) { seen = append(seen, e) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// Fill the peer's FIFO (b never progresses) so that a request queues.
	for i := 0; ; i++ {
		err := ep.AMShort(1, uint64(i), nil)
		if errors.Is(err, uct.ErrNoResource) {
			break
		}
		if err != nil {
			t.Fatalf("am_short %d: %v", i, err)
		}
		if i > 1<<20 {
			t.Fatal("FIFO never filled")
		}
	}
	req := &cancelReq{}
	if err := ep.PendingAdd(req); err != nil {
		t.Fatalf("PendingAdd on a full FIFO: %v", err)
	}

	if err := a.(*Iface).SetDeviceStatus(uct.DeviceRDMADisabled); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Status != uct.DeviceUp|uct.DeviceRDMADisabled || seen[0].Device != "memory" {
		t.Fatalf("watcher saw %+v, want one up|rdma-disabled event for memory", seen)
	}
	if req.dispatched != 0 || len(req.canceled) != 1 || !errors.Is(req.canceled[0], uct.ErrCanceled) {
		t.Fatalf("pending request: dispatched %d, canceled with %v; want canceled once with ErrCanceled", req.dispatched, req.canceled)
	}
	err = ep.AMShort(1, 0, nil)
	var oe *uct.OpError
	if !errors.Is(err, uct.ErrLocalNICFailed) || !errors.As(err, &oe) || oe.Op != "am_short" {
		t.Fatalf("am_short on a disabled device: %v, want an am_short OpError wrapping ErrLocalNICFailed", err)
	}
	if !errors.Is(ep.Err(), uct.ErrLocalNICFailed) {
		t.Fatalf("endpoint error %v, want ErrLocalNICFailed", ep.Err())
	}
	if uct.RemedyOf(err) != uct.RemedyIfaceDead {
		t.Fatalf("remedy %v, want iface-dead", uct.RemedyOf(err))
	}
	if _, err := a.Connect(b.Address(), uct.EPParams{}); !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Fatalf("connect on a disabled device: %v, want ErrLocalNICFailed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := a.Events().Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != uct.EventDeviceFatal || !errors.Is(ev.Err, uct.ErrLocalNICFailed) {
		t.Fatalf("event %v, want device fatal with ErrLocalNICFailed", ev)
	}
	ev.Ack()

	// The device comes back for new connections only.
	if err := a.(*Iface).SetDeviceStatus(uct.DeviceUp); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[1].Status != uct.DeviceUp {
		t.Fatalf("watcher saw %+v, want rdma-disabled then up", seen)
	}
	ep2, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatalf("connect after the device came back: %v", err)
	}
	ep2.Close()
	if !errors.Is(ep.Err(), uct.ErrLocalNICFailed) {
		t.Fatalf("old endpoint revived: %v", ep.Err())
	}
	if err := a.(*Iface).SetDeviceStatus(uct.DeviceStatus(99)); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("bad status: %v, want ErrInvalidParam", err)
	}
}

// Closing an endpoint from inside the error handler that reports its peer's
// death must not deadlock (the handler runs on the peer watcher).
func TestCloseInErrorHandler(t *testing.T) {
	_, it := openIface(t)
	victim := startChild(t, "echo")
	ep := victim.connect(t, it)
	closed := make(chan error, 1)
	it.SetErrorHandler(func(arg any, e uct.Endpoint, err error) {
		if arg != "ctx" || e != ep || !errors.Is(err, uct.ErrPeerFailed) {
			closed <- errors.New("handler got the wrong arg, endpoint or error")
			return
		}
		closed <- e.Close()
	}, "ctx")
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("close inside the error handler: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("error handler did not run or Close inside it hung")
	}
	if err := ep.AMShort(1, 0, nil); !errors.Is(err, uct.ErrPeerFailed) {
		t.Fatalf("after close in handler: %v, want ErrPeerFailed", err)
	}
	if err := ep.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// A sender SIGKILLed between claiming a FIFO cell and publishing it must
// not stop the receiver: messages from other peers behind that cell still
// arrive, and the dead writer's cell is not delivered.
func TestWriterKilledMidCell(t *testing.T) {
	r := newClaimedHead(t)
	if err := r.hang.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sendRetry(t, r.it, func() error { return r.epO.AMShort(amEcho, 42, []byte("behind")) })
	// the message may arrive around the cell before the skip (held_linux.go)
	progressUntil(t, r.it, "a message behind the dead writer's cell, and the cell skipped", func() bool {
		return len(r.got) > 0 && r.self.rx.stuckOwner(r.self.head) == 0
	})
	if len(r.got) != 1 || string(r.got[0][8:]) != "behind" || r.got[0][0] != 42 {
		t.Fatalf("delivered %q, want exactly the other peer's message", r.got)
	}
	if r.self.rx.stuckOwner(r.self.head) != 0 {
		t.Fatal("head still stuck")
	}
	quitChild(t, r.it, r.epO, r.other)
}

// claimedHead is an iface whose head cell a claimhang child has claimed
// (and not published), with an echo child connected whose messages queue
// behind that cell; got collects what the iface delivers.
type claimedHead struct {
	it    uct.Iface
	self  *Iface
	got   [][]byte
	other *child
	epO   uct.Endpoint
	hang  *child
}

func newClaimedHead(t *testing.T) *claimedHead {
	_, it := openIface(t)
	r := &claimedHead{it: it, self: it.(*Iface)}
	it.SetAMHandler(amEcho, func(_ any, data []byte, _ uct.AMFlags) {
		r.got = append(r.got, append([]byte(nil), data...))
	}, nil)
	it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	r.other = startChild(t, "echo")
	r.epO = r.other.connect(t, it)
	r.hang = startChild(t, "claimhang")
	r.hang.connect(t, it)

	deadline := time.Now().Add(10 * time.Second)
	for r.self.rx.stuckOwner(r.self.head) != r.hang.cmd.Process.Pid {
		if time.Now().After(deadline) {
			t.Fatal("the child never claimed our head cell")
		}
		time.Sleep(time.Millisecond)
	}
	return r
}
