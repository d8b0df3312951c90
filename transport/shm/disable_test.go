package shm

import (
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// plainReq is a pending request without a canceller: it records what its
// own post returned when dispatched.
type plainReq struct {
	ep   uct.Endpoint
	errs []error
}

func (r *plainReq) Dispatch() error {
	err := r.ep.AMShort(1, 0, nil)
	r.errs = append(r.errs, err)
	return err
}

func drainEvents(q *uct.EventQueue) []uct.EventType {
	var out []uct.EventType
	for {
		ev, ok := q.TryGet()
		if !ok {
			return out
		}
		out = append(out, ev.Type)
		ev.Ack()
	}
}

// TestDeviceDisableSemantics: the device status is a set of flags with an
// event for every change (down, then RDMA disabled on top, posts both);
// disabling completes pending requests that have no canceller, stops
// receiving, releases the endpoints, and the peer's endpoint fails with
// ErrRemoteNICFailed.
func TestDeviceDisableSemantics(t *testing.T) {
	_, a := openIface(t)
	_, b := openIface(t)
	ia := a.(*Iface)
	a.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	b.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	ab, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ab.Close()
	ba, err := b.Connect(a.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	var seen []uct.DeviceStatus
	w, err := a.WatchDevice(func(e uct.DeviceStatusEvent) { seen = append(seen, e.Status) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	received := 0
	a.SetAMHandler(2, func(any, []byte, uct.AMFlags) { received++ }, nil)

	// A message waits in a's FIFO; a request without a canceller waits on
	// a's full send FIFO to b.
	if err := ba.AMShort(2, 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		err := ab.AMShort(1, uint64(i), nil)
		if errors.Is(err, uct.ErrNoResource) {
			break
		}
		if err != nil || i > 1<<20 {
			t.Fatalf("filling b's FIFO: %v after %d", err, i)
		}
	}
	req := &plainReq{ep: ab}
	if err := ab.PendingAdd(req); err != nil {
		t.Fatal(err)
	}

	if err := ia.SetDeviceStatus(uct.DeviceDown); err != nil {
		t.Fatal(err)
	}
	if err := ia.SetDeviceStatus(uct.DeviceRDMADisabled); err != nil {
		t.Fatal(err)
	}
	want := []uct.DeviceStatus{uct.DeviceDown, uct.DeviceDown | uct.DeviceRDMADisabled}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("watcher saw %v, want %v", seen, want)
	}
	evs := drainEvents(a.Events())
	if len(evs) != 2 || evs[0] != uct.EventPortError || evs[1] != uct.EventDeviceFatal {
		t.Fatalf("events %v, want port error then device fatal", evs)
	}
	if len(req.errs) != 1 || !errors.Is(req.errs[0], uct.ErrLocalNICFailed) {
		t.Fatalf("pending request without a canceller: dispatched with %v, want once with ErrLocalNICFailed", req.errs)
	}
	for i := 0; i < 10; i++ {
		a.Progress()
	}
	if received != 0 {
		t.Fatalf("a disabled iface delivered %d messages", received)
	}
	if n := len(ia.endpoints()); n != 0 {
		t.Fatalf("%d endpoints still held by the disabled iface", n)
	}
	if _, err := ab.PutBcopy([]byte{1}, 0, nil); !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Fatalf("put on the disabled device: %v", err)
	}
	// The peer learns it on its next operation and liveness check.
	err = ba.AMShort(2, 2, nil)
	if !errors.Is(err, uct.ErrRemoteNICFailed) {
		t.Fatalf("peer's send to the disabled iface: %v, want ErrRemoteNICFailed", err)
	}
	if err := ba.CheckLiveness(nil); !errors.Is(err, uct.ErrRemoteNICFailed) {
		t.Fatalf("peer's liveness check: %v, want ErrRemoteNICFailed", err)
	}
	if evs := drainEvents(b.Events()); len(evs) != 1 || evs[0] != uct.EventEndpointError {
		t.Fatalf("peer's events %v, want one endpoint error", evs)
	}
	// Back up: new connections work and the waiting message is delivered.
	if err := ia.SetDeviceStatus(uct.DeviceUp); err != nil {
		t.Fatal(err)
	}
	if evs := drainEvents(a.Events()); len(evs) != 2 || evs[0] != uct.EventPortActive || evs[1] != uct.EventPortActive {
		t.Fatalf("events after up %v, want port active (link), port active (RDMA enabled)", evs)
	}
	progressUntil(t, a, "the message that waited", func() bool { return received == 1 })
	ba2, err := b.Connect(a.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba2.Close()
	if err := ba2.AMShort(2, 3, nil); err != nil {
		t.Fatalf("new endpoint after the device came back: %v", err)
	}
	progressUntil(t, a, "the new message", func() bool { return received == 2 })
}
