package ucttest

import (
	"errors"
	"sync"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// testNotify checks Notify (VipCQNotify): one handler per completion, in
// completion order, waiting completions remembered, each handler told the
// queue and the endpoint, queued handlers canceled by Close.
func testNotify(t *testing.T, h *Harness) {
	// A completion is a received message on an iface with CapEventRecv,
	// else a send completion on an iface with CapEventSendComp.
	var (
		ni      uct.Iface
		trigger func(b byte)
		want    uct.CompletionInfo // what a handler learns of a completion
	)
	switch {
	case h.AttrB.Cap.Has(uct.CapEventRecv | uct.CapAMBcopy):
		ni = h.P.B
		want = uct.CompletionInfo{Queue: uct.NotifyRecv}
		trigger = func(b byte) {
			h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(8, []byte{b}, nil); return err })
		}
	case h.AttrA.Cap.Has(uct.CapEventSendComp | uct.CapAMZcopy):
		ni = h.P.A
		want = uct.CompletionInfo{Endpoint: h.EP, Queue: uct.NotifySend}
		trigger = func(b byte) {
			h.Must("AMZcopy", func(c *uct.Completion) error { return h.EP.AMZcopy(8, []byte{b}, nil, c) })
		}
	default:
		t.Skip("iface announces neither CapEventRecv (with AM bcopy) nor CapEventSendComp (with AM zcopy)")
	}
	r := h.setAM(8, nil)
	// Drain whatever the connection produced.
	for i := 0; i < 100; i++ {
		h.Progress()
	}
	var (
		mu    sync.Mutex
		calls []string
		infos []uct.CompletionInfo
		errs  []error
	)
	handler := func(arg any, c uct.CompletionInfo, err error) {
		mu.Lock()
		calls = append(calls, arg.(string))
		infos = append(infos, c)
		errs = append(errs, err)
		mu.Unlock()
	}
	ncalls := func() int { mu.Lock(); defer mu.Unlock(); return len(calls) }
	if err := ni.Notify(nil, nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("Notify(nil) = %v, want ErrInvalidParam", err)
	}
	// Consume a possibly remembered completion.
	if err := ni.Notify(handler, "drain"); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	base := ncalls()
	if base == 0 {
		trigger(0)
		h.Until("drain handler", func() bool { return ncalls() == 1 })
		base = 1
	}
	// Two handlers queue; two completions run them in order.
	for _, name := range []string{"first", "second"} {
		if err := ni.Notify(handler, name); err != nil {
			t.Fatalf("Notify(%s): %v", name, err)
		}
	}
	if n := ncalls(); n != base {
		t.Fatalf("handlers ran before any completion: %v", calls)
	}
	got := r.n()
	trigger(1)
	h.Until("first handler", func() bool { return ncalls() >= base+1 })
	trigger(2)
	h.Until("second handler", func() bool { return ncalls() == base+2 })
	h.Until("messages", func() bool { return r.n() >= got+2 })
	mu.Lock()
	if calls[base] != "first" || calls[base+1] != "second" || errs[base] != nil || errs[base+1] != nil {
		t.Errorf("handlers ran as %v with %v, want first, second with nil", calls[base:], errs[base:])
	}
	for i := base; i < base+2; i++ {
		if infos[i] != want {
			t.Errorf("handler %s learned %+v, want %+v", calls[i], infos[i], want)
		}
	}
	mu.Unlock()
	// Three completions wait; three Notify calls run three handlers at
	// once, in completion order.
	got = r.n()
	for b := byte(3); b < 6; b++ {
		trigger(b)
	}
	h.Until("three messages", func() bool { return r.n() >= got+3 })
	base += 2
	for _, name := range []string{"w1", "w2", "w3"} {
		if err := ni.Notify(handler, name); err != nil {
			t.Fatalf("Notify(%s): %v", name, err)
		}
	}
	mu.Lock()
	if len(calls) != base+3 || calls[base] != "w1" || calls[base+2] != "w3" {
		t.Errorf("three waiting completions and three Notify calls ran %v, want w1 w2 w3", calls[base:])
	}
	for i := base; i < len(calls); i++ {
		if infos[i] != want || errs[i] != nil {
			t.Errorf("handler %s learned %+v, %v; want %+v, nil", calls[i], infos[i], errs[i], want)
		}
	}
	base = len(calls)
	mu.Unlock()
	// A queued handler is canceled by Close.
	if err := ni.Notify(handler, "closed"); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	before := ncalls()
	if err := ni.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != base+1 {
		t.Fatalf("after Close the queued handler ran %d times, want once", len(calls)-base)
	}
	if before == base && !errors.Is(errs[base], uct.ErrCanceled) {
		t.Errorf("queued handler at Close got %v, want ErrCanceled", errs[base])
	}
}
