package ucttest

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Harness is one fresh Pair with an endpoint from A to B. The iface
// closes are registered with t.Cleanup.
type Harness struct {
	T     testing.TB
	P     *Pair
	AttrA uct.IfaceAttr
	AttrB uct.IfaceAttr
	EP    uct.Endpoint // A → B
}

// NewHarness opens a Pair with f and connects A to B.
func NewHarness(t testing.TB, f Factory) *Harness {
	t.Helper()
	p := f(t)
	if p == nil || p.A == nil || p.B == nil || p.MDA == nil || p.MDB == nil {
		t.Fatalf("factory returned an incomplete pair: %+v", p)
	}
	h := &Harness{T: t, P: p, AttrA: p.A.Attr(), AttrB: p.B.Attr()}
	t.Cleanup(func() {
		if h.EP != nil {
			_ = h.EP.Close()
		}
		_ = p.A.Close()
		_ = p.B.Close()
		if p.Cleanup != nil {
			p.Cleanup()
		}
	})
	ep, err := p.A.Connect(p.B.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		t.Fatalf("connect A to B: %v", err)
	}
	h.EP = ep
	return h
}

// NeedCap skips the test unless iface A announces every capability in c.
func (h *Harness) NeedCap(c uct.Cap, what string) {
	h.T.Helper()
	if !h.AttrA.Cap.Has(c) {
		h.T.Skipf("iface %s/%s lacks %s (cap %#x)", h.AttrA.Transport, h.AttrA.Device, what, uint64(c))
	}
}

// Progress runs one round of progress on both ifaces.
func (h *Harness) Progress() int {
	n := h.P.A.Progress()
	n += h.P.B.Progress()
	if n == 0 {
		runtime.Gosched()
	}
	return n
}

// Until progresses both ifaces until cond holds; it fails the test after
// Timeout.
func (h *Harness) Until(what string, cond func() bool) {
	h.T.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.T.Fatalf("%s: not done after %v of progress", what, Timeout)
		}
		h.Progress()
	}
}

// Op is a Completion that records how often it was invoked.
type Op struct {
	C     uct.Completion
	calls atomic.Int32
	mu    sync.Mutex
	err   error
}

// NewOp returns an Op whose Completion counts one operation.
func NewOp() *Op {
	o := &Op{}
	o.C.Count = 1
	o.C.Func = func(c *uct.Completion) {
		o.mu.Lock()
		o.err = c.Status
		o.mu.Unlock()
		o.calls.Add(1)
	}
	return o
}

// Done reports whether the completion has fired.
func (o *Op) Done() bool { return o.calls.Load() > 0 }

// Calls is the number of times the completion fired.
func (o *Op) Calls() int { return int(o.calls.Load()) }

// Err is the status the completion fired with.
func (o *Op) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Do posts an operation and waits for its result: it retries on
// ErrNoResource (progressing in between), waits for the completion on
// ErrInProgress, and returns the operation's final error.
func (h *Harness) Do(what string, post func(c *uct.Completion) error) error {
	h.T.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		o := NewOp()
		err := post(&o.C)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, uct.ErrNoResource):
			if time.Now().After(deadline) {
				h.T.Fatalf("%s: still no resource after %v", what, Timeout)
			}
			h.Progress()
			continue
		case errors.Is(err, uct.ErrInProgress) && !isOpFailure(err):
			h.Until(what+" completion", o.Done)
			if n := o.Calls(); n != 1 {
				h.T.Errorf("%s: completion invoked %d times", what, n)
			}
			return o.Err()
		default:
			return err
		}
	}
}

// isOpFailure is true for an *OpError whose status is not in-progress.
func isOpFailure(err error) bool {
	var oe *uct.OpError
	return errors.As(err, &oe) && oe.Status != uct.ErrInProgress
}

// Must is Do that fails the test on error.
func (h *Harness) Must(what string, post func(c *uct.Completion) error) {
	h.T.Helper()
	if err := h.Do(what, post); err != nil {
		h.T.Fatalf("%s: %v", what, err)
	}
}

// FlushEP flushes endpoint A→B and waits for it.
func (h *Harness) FlushEP() {
	h.T.Helper()
	h.Must("endpoint flush", func(c *uct.Completion) error { return h.EP.Flush(false, c) })
}

// pattern returns n bytes that depend on seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed + byte(i>>8)
	}
	return b
}

// postNoWait posts without waiting for the completion (retrying on
// no-resource); it returns the Op, done or not.
func (h *Harness) postNoWait(what string, post func(c *uct.Completion) error) *Op {
	h.T.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		o := NewOp()
		err := post(&o.C)
		switch {
		case err == nil:
			o.calls.Store(1) // done locally; the completion will not fire
			return o
		case errors.Is(err, uct.ErrNoResource):
			if time.Now().After(deadline) {
				h.T.Fatalf("%s: still no resource after %v", what, Timeout)
			}
			h.Progress()
		case errors.Is(err, uct.ErrInProgress) && !isOpFailure(err):
			return o
		default:
			h.T.Fatalf("%s: %v", what, err)
		}
	}
}

// allDone reports whether every op's completion has been invoked.
func allDone(ops []*Op) bool {
	for _, o := range ops {
		if !o.Done() {
			return false
		}
	}
	return true
}
