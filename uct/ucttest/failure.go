package ucttest

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func testPeerClosed(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapCheckLiveness, "liveness check")
	// Alive first.
	h.Must("CheckLiveness (alive)", func(c *uct.Completion) error { return h.EP.CheckLiveness(c) })
	if err := h.EP.Err(); err != nil {
		t.Fatalf("healthy endpoint has Err %v", err)
	}
	type handlerArg struct{ name string }
	arg := &handlerArg{"peer-closed"}
	var (
		hmu   sync.Mutex
		hargs []any
		heps  []uct.Endpoint
		herrs []error
	)
	h.P.A.SetErrorHandler(func(a any, ep uct.Endpoint, err error) {
		hmu.Lock()
		hargs, heps, herrs = append(hargs, a), append(heps, ep), append(herrs, err)
		hmu.Unlock()
	}, arg)
	if err := h.P.B.Close(); err != nil {
		t.Errorf("close B: %v", err)
	}
	defer func() {
		// If the error handler was told, it got its own arg, this endpoint
		// (or nil for an iface-wide error) and a non-nil error.
		hmu.Lock()
		defer hmu.Unlock()
		for i := range hargs {
			if hargs[i] != arg {
				t.Errorf("error handler got arg %v, want the one given to SetErrorHandler", hargs[i])
			}
			if heps[i] != nil && heps[i] != h.EP {
				t.Errorf("error handler got endpoint %v, want %v or nil", heps[i].Peer(), h.EP.Peer())
			}
			if herrs[i] == nil {
				t.Error("error handler called with a nil error")
			}
		}
		t.Logf("error handler called %d times", len(hargs))
		// Events posted about the failure are acked so Close does not wait.
		for {
			ev, ok := h.P.A.Events().TryGet()
			if !ok {
				break
			}
			t.Logf("event: %v", ev)
			ev.Ack()
		}
	}()
	// Contract: after the peer iface is closed, CheckLiveness completes
	// (synchronously or through its completion) with an endpoint-fatal
	// error, the endpoint then reports that error in Err, and new
	// operations fail fast with an endpoint-fatal status.
	err := h.Do("CheckLiveness (peer closed)", func(c *uct.Completion) error { return h.EP.CheckLiveness(c) })
	if err == nil {
		t.Fatal("CheckLiveness after the peer iface closed: nil, want an error")
	}
	if !uct.StatusOf(err).IsEndpointFatal() {
		t.Errorf("CheckLiveness after peer close: %v (status %q, remedy %v) is not endpoint-fatal", err, uct.StatusOf(err), uct.RemedyOf(err))
	}
	if e := h.EP.Err(); e == nil || !uct.StatusOf(e).IsEndpointFatal() {
		t.Errorf("endpoint Err after failed liveness: %v, want an endpoint-fatal error", e)
	}
	if h.AttrA.Cap.Has(uct.CapAMBcopy) {
		_, err := h.EP.AMBcopy(1, []byte{1}, nil)
		if err == nil || errors.Is(err, uct.ErrNoResource) || errors.Is(err, uct.ErrInProgress) {
			t.Errorf("AMBcopy on a failed endpoint: %v, want a fast endpoint-fatal error", err)
		} else if !uct.StatusOf(err).IsEndpointFatal() {
			t.Errorf("AMBcopy on a failed endpoint: %v is not endpoint-fatal", err)
		}
		var oe *uct.OpError
		if err != nil && !errors.As(err, &oe) {
			t.Errorf("AMBcopy on a failed endpoint: %T %v is not an *uct.OpError", err, err)
		}
	}
}

func testCloseInFlight(t *testing.T, h *Harness, endpoint bool) {
	if !h.AttrA.Cap.Has(uct.CapPutZcopy) && !h.AttrA.Cap.Has(uct.CapAMZcopy) {
		t.Skip("iface has neither put nor AM zcopy")
	}
	var rm *RemoteMem
	if h.AttrA.Cap.Has(uct.CapPutZcopy) {
		rm = h.RemoteMemory(1<<20, !h.P.MDB.Attr().CanRegister)
	} else {
		h.setAM(9, nil)
	}
	var ops []*Op
	buf := pattern(min(64<<10, max(h.AttrA.PutMaxZcopy, h.AttrA.AMMaxZcopy-h.AttrA.AMMaxHeader)), 3)
	for i := 0; i < 64; i++ {
		o := NewOp()
		var err error
		if rm != nil {
			n := min(len(buf), h.AttrA.PutMaxZcopy)
			err = h.EP.PutZcopy([][]byte{buf[:n]}, rm.Mem.Address()+uint64(i*n%(1<<20-n+1)), rm.RKey, &o.C)
		} else {
			err = h.EP.AMZcopy(9, nil, [][]byte{buf[:min(len(buf), h.AttrA.AMMaxZcopy)]}, &o.C)
		}
		switch {
		case err == nil:
		case errors.Is(err, uct.ErrInProgress):
			ops = append(ops, o)
		case errors.Is(err, uct.ErrNoResource):
		default:
			t.Fatalf("post %d: %v", i, err)
		}
	}
	t.Logf("%d operations in flight at close", len(ops))
	done := make(chan error, 1)
	go func() {
		if endpoint {
			done <- h.EP.Close()
		} else {
			done <- h.P.A.Close()
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(Timeout):
		t.Fatalf("close with %d operations in flight did not return within %v", len(ops), Timeout)
	}
	if endpoint {
		// Completions may be delivered by the iface's progress.
		h.Until("completions after endpoint close", func() bool { return allDone(ops) })
	}
	checkOnceCanceled(t, ops)
	// Nothing more fires later.
	for i := 0; i < 100; i++ {
		if !endpoint {
			h.P.B.Progress()
		} else {
			h.Progress()
		}
	}
	for i, o := range ops {
		if n := o.Calls(); n > 1 {
			t.Errorf("operation %d: completion invoked %d times", i, n)
		}
	}
	if endpoint {
		if err := h.EP.Close(); err != nil {
			t.Errorf("second endpoint Close: %v", err)
		}
	} else {
		if err := h.P.A.Close(); err != nil {
			t.Errorf("second iface Close: %v", err)
		}
	}
}

func testBadIfaceAddress(t *testing.T, h *Harness) {
	good := h.P.B.Address()
	bad := [][]byte{nil, {}, {0}, bytes.Repeat([]byte{0xee}, len(good)), good[:len(good)/2]}
	flipped := append([]byte(nil), good...)
	if len(flipped) > 0 {
		flipped[0] ^= 0xff
		bad = append(bad, flipped)
	}
	for _, a := range bad {
		ep, err := h.P.A.Connect(a, uct.EPParams{Timeout: time.Second})
		if err == nil {
			_ = ep.Close()
			t.Errorf("Connect(%x) succeeded", a)
			continue
		}
		if !errors.Is(err, uct.ErrInvalidAddress) && !errors.Is(err, uct.ErrUnreachable) {
			t.Errorf("Connect(%x): %v, want an error wrapping ErrInvalidAddress or ErrUnreachable", a, err)
		}
	}
}

func testErrorHandler(t *testing.T, h *Harness) {
	// SetErrorHandler with nil restores the default; both calls must be
	// accepted on an open iface. Delivery is exercised by transports'
	// fault tests.
	type key struct{}
	h.P.A.SetErrorHandler(func(any, uct.Endpoint, error) {}, key{})
	h.P.A.SetErrorHandler(nil, nil)
	if h.P.A.Events() == nil {
		t.Error("Iface.Events() is nil")
	}
	w, err := h.P.A.WatchDevice(func(uct.DeviceStatusEvent) {})
	if err != nil {
		t.Fatalf("WatchDevice: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Watch.Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Watch.Close: %v", err)
	}
	if _, err := h.P.A.WatchDevice(nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("WatchDevice(nil) = %v, want ErrInvalidParam", err)
	}
}

func testUseAfterClose(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	if err := h.EP.Close(); err != nil {
		t.Fatalf("endpoint Close: %v", err)
	}
	if err := h.EP.Close(); err != nil {
		t.Errorf("second endpoint Close: %v", err)
	}
	_, err := h.EP.AMBcopy(1, []byte{1}, nil)
	if err == nil || errors.Is(err, uct.ErrNoResource) || errors.Is(err, uct.ErrInProgress) {
		t.Errorf("AMBcopy on a closed endpoint: %v, want an error", err)
	}
	// The iface still works: a new endpoint to the same peer.
	ep, err := h.P.A.Connect(h.P.B.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		t.Fatalf("reconnect after endpoint close: %v", err)
	}
	defer ep.Close()
	r := h.setAM(11, nil)
	h.Must("AMBcopy on the new endpoint", func(*uct.Completion) error { _, err := ep.AMBcopy(11, []byte{7}, nil); return err })
	h.Until("message on the new endpoint", func() bool { return r.n() == 1 })
	if err := h.P.A.Close(); err != nil {
		t.Errorf("iface Close: %v", err)
	}
	if err := h.P.A.Close(); err != nil {
		t.Errorf("second iface Close: %v", err)
	}
	if _, err := ep.AMBcopy(11, []byte{8}, nil); err == nil || errors.Is(err, uct.ErrNoResource) {
		t.Errorf("AMBcopy after its iface closed: %v, want an error", err)
	}
}

// testPeerClosedIsolation: when one peer fails, endpoints of the same iface
// to other peers keep working.
func testPeerClosedIsolation(t *testing.T, h *Harness, f Factory) {
	h.NeedCap(uct.CapCheckLiveness|uct.CapAMBcopy, "liveness check and AM bcopy")
	other := f(t)
	t.Cleanup(func() {
		_ = other.A.Close()
		_ = other.B.Close()
		if other.Cleanup != nil {
			other.Cleanup()
		}
	})
	ep2, err := h.P.A.Connect(other.B.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		t.Fatalf("connect A to a second peer: %v", err)
	}
	defer ep2.Close()
	got := 0
	if err := other.B.SetAMHandler(12, func(any, []byte, uct.AMFlags) { got++ }, nil); err != nil {
		t.Fatal(err)
	}
	h.P.A.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	if err := h.P.B.Close(); err != nil {
		t.Errorf("close B: %v", err)
	}
	if err := h.Do("CheckLiveness (peer closed)", func(c *uct.Completion) error { return h.EP.CheckLiveness(c) }); err == nil {
		t.Fatal("CheckLiveness after the peer iface closed: nil, want an error")
	}
	until := func(what string, cond func() bool) {
		deadline := time.Now().Add(Timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not done after %v", what, Timeout)
			}
			h.P.A.Progress()
			other.B.Progress()
		}
	}
	if err := ep2.Err(); err != nil {
		t.Fatalf("endpoint to the healthy peer is in error: %v", err)
	}
	for i := 0; i < 4; i++ {
		deadline := time.Now().Add(Timeout)
		for {
			_, err := ep2.AMBcopy(12, []byte{byte(i)}, nil)
			if err == nil {
				break
			}
			if !errors.Is(err, uct.ErrNoResource) || time.Now().After(deadline) {
				t.Fatalf("AMBcopy to the healthy peer: %v", err)
			}
			h.P.A.Progress()
			other.B.Progress()
		}
	}
	until("messages to the healthy peer", func() bool { return got == 4 })
	lv := NewOp()
	switch err := ep2.CheckLiveness(&lv.C); {
	case err == nil:
	case errors.Is(err, uct.ErrInProgress):
		until("liveness of the healthy peer", lv.Done)
		if lv.Err() != nil {
			t.Errorf("CheckLiveness of the healthy peer: %v", lv.Err())
		}
	default:
		t.Errorf("CheckLiveness of the healthy peer: %v", err)
	}
	for {
		ev, ok := h.P.A.Events().TryGet()
		if !ok {
			break
		}
		ev.Ack()
	}
}
