package rc

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

type plainReq struct {
	ep   uct.Endpoint
	errs []error
}

func (r *plainReq) Dispatch() error {
	_, err := r.ep.AMBcopy(9, []byte("pending"), nil)
	r.errs = append(r.errs, err)
	return err
}

// TestRDMADisabled: disabling a's device (NetworkDirect's RDMA-disabled)
// flushes a's operations in flight with an error, fails its endpoint and
// new operations with ErrLocalNICFailed, dispatches a pending request
// without a canceller into that error, refuses new connections, stops a
// receiving, and the peer's endpoint to a fails with ErrRemoteNICFailed.
// Watchers see the flag added to the link flag and removed again.
func TestRDMADisabled(t *testing.T) {
	mda, mdb, a, b := openLoopIfaces(t)
	a.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	b.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	got := 0
	a.SetAMHandler(9, func(any, []byte, uct.AMFlags) { got++ }, nil)
	var seen []uct.DeviceStatus
	w, err := a.WatchDevice(func(e uct.DeviceStatusEvent) { seen = append(seen, e.Status) })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
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
	mem, err := mdb.Alloc(1<<16, uct.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	rk, err := mda.UnpackRKey(mem.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	// A put in flight (b does not progress, so it is not acknowledged),
	// then AMs until a runs out of credits, and a pending request.
	var putErr error
	putDone := false
	c := &uct.Completion{Count: 1, Func: func(c *uct.Completion) { putErr, putDone = c.Status, true }}
	if err := ab.PutZcopy([][]byte{make([]byte, 1<<16)}, mem.Address(), rk, c); err != uct.ErrInProgress {
		t.Fatalf("put: %v", err)
	}
	for i := 0; ; i++ {
		_, err := ab.AMBcopy(9, []byte{byte(i)}, nil)
		if errors.Is(err, uct.ErrNoResource) {
			break
		}
		if err != nil || i > 1<<16 {
			t.Fatalf("AM %d: %v", i, err)
		}
	}
	req := &plainReq{ep: ab}
	if err := ab.PendingAdd(req); err != nil {
		t.Fatal(err)
	}

	if err := a.SetRDMADisabled(true); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != uct.DeviceUp|uct.DeviceRDMADisabled {
		t.Fatalf("watcher saw %v, want up|rdma-disabled", seen)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !putDone || len(req.errs) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("put done %v, pending request dispatched %d times", putDone, len(req.errs))
		}
		a.Progress()
	}
	if putErr == nil {
		t.Error("the put in flight completed without error on a disabled device")
	}
	if len(req.errs) != 1 || !errors.Is(req.errs[0], uct.ErrLocalNICFailed) {
		t.Errorf("pending request without a canceller dispatched with %v, want once with ErrLocalNICFailed", req.errs)
	}
	if err := ab.Err(); !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Errorf("endpoint error %v, want ErrLocalNICFailed", err)
	}
	if err := ab.PutShort([]byte{1}, mem.Address(), rk); !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Errorf("put after disable: %v", err)
	}
	if _, err := a.Connect(b.Address(), uct.EPParams{}); !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Errorf("connect on a disabled device: %v", err)
	}
	var evs []*uct.Event
	for hasEvent(evs, uct.EventDeviceFatal) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no device fatal event, got %v", evs)
		}
		evs = append(evs, events(a)...)
		time.Sleep(time.Millisecond)
	}
	// The peer learns it, and what it sends is not received.
	for ba.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the peer's endpoint did not learn that a's device was disabled")
		}
		b.Progress()
		ba.AMBcopy(9, []byte("to a disabled device"), nil)
		a.Progress()
		time.Sleep(100 * time.Microsecond)
	}
	if err := ba.Err(); !errors.Is(err, uct.ErrRemoteNICFailed) {
		t.Errorf("peer's endpoint error %v, want ErrRemoteNICFailed", err)
	}
	if got != 0 {
		t.Errorf("a disabled device received %d AMs", got)
	}
	// The passive QP that served the peer's endpoint is released.
	passive := func() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.passive) }
	for passive() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d passive QPs still held by the disabled iface", passive())
		}
		time.Sleep(time.Millisecond)
	}
	if err := a.SetRDMADisabled(false); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[1] != uct.DeviceUp {
		t.Fatalf("watcher saw %v, want up|rdma-disabled then up", seen)
	}
	ep2, err := b.Connect(a.Address(), uct.EPParams{})
	if err != nil {
		t.Fatalf("connect after the device came back: %v", err)
	}
	defer ep2.Close()
	if _, err := ep2.AMBcopy(9, []byte("back"), nil); err != nil {
		t.Fatal(err)
	}
	for got == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no AM after the device came back")
		}
		a.Progress()
		b.Progress()
	}
}
