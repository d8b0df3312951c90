package ucttest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

func testFlushOrdering(t *testing.T, h *Harness) {
	if !h.AttrA.Cap.Has(uct.CapPutZcopy) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutShort) {
		t.Skip("iface has no put")
	}
	const chunk, count = 4096, 64
	rm := h.RemoteMemory(chunk*count, !h.P.MDB.Attr().CanRegister)
	srcs := make([][]byte, count)
	var ops []*Op
	for i := range srcs {
		n := chunk
		if h.AttrA.Cap.Has(uct.CapPutZcopy) {
			n = min(n, h.AttrA.PutMaxZcopy)
		} else if h.AttrA.Cap.Has(uct.CapPutBcopy) {
			n = min(n, h.AttrA.PutMaxBcopy)
		} else {
			n = min(n, h.AttrA.PutMaxShort)
		}
		srcs[i] = pattern(n, byte(i+1))
		raddr := rm.Mem.Address() + uint64(i*chunk)
		ops = append(ops, h.postNoWait("put", func(c *uct.Completion) error { return h.putAny(srcs[i], raddr, rm.RKey, c) }))
	}
	// Flush without waiting for the puts' own completions first.
	fl := NewOp()
	err := h.EP.Flush(false, &fl.C)
	for errors.Is(err, uct.ErrNoResource) {
		h.Progress()
		fl = NewOp()
		err = h.EP.Flush(false, &fl.C)
	}
	switch {
	case err == nil:
	case errors.Is(err, uct.ErrInProgress):
		h.Until("flush", fl.Done)
		if fl.Err() != nil {
			t.Fatalf("flush completed with %v", fl.Err())
		}
	default:
		t.Fatalf("flush: %v", err)
	}
	for i, o := range ops {
		if !o.Done() {
			t.Errorf("put %d: completion not invoked when flush completed", i)
		} else if o.Err() != nil {
			t.Errorf("put %d: %v", i, o.Err())
		}
		if !bytes.Equal(rm.Buf[i*chunk:i*chunk+len(srcs[i])], srcs[i]) {
			t.Errorf("put %d: not visible at the target after flush", i)
		}
	}
}

func testIfaceFlush(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	r := h.setAM(6, nil)
	for i := 0; i < 16; i++ {
		h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(6, []byte{byte(i)}, nil); return err })
	}
	h.Must("iface flush", func(c *uct.Completion) error { return h.P.A.Flush(c) })
	h.Until("all messages", func() bool { return r.n() == 16 })
	for i := 0; i < 16; i++ {
		if got, _ := r.get(i); !bytes.Equal(got, []byte{byte(i)}) {
			t.Errorf("message %d: %v (AMs on one endpoint arrive in order)", i, got)
		}
	}
}

func testFence(t *testing.T, h *Harness) {
	if !h.AttrA.Cap.Has(uct.CapPutShort) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutZcopy) {
		t.Skip("iface has no put")
	}
	rm := h.RemoteMemory(4096, !h.P.MDB.Attr().CanRegister)
	raddr := rm.Mem.Address()
	for i := 1; i <= 20; i++ {
		v := pattern(8, byte(i))
		h.postNoWait("put", func(c *uct.Completion) error { return h.putAny(v, raddr, rm.RKey, c) })
		if err := h.EP.Fence(); err != nil {
			t.Fatalf("endpoint Fence: %v", err)
		}
		if err := h.P.A.Fence(); err != nil {
			t.Fatalf("iface Fence: %v", err)
		}
	}
	h.FlushEP()
	if !bytes.Equal(rm.Buf[:8], pattern(8, 20)) {
		t.Errorf("after fenced puts the last one must win: %x, want %x", rm.Buf[:8], pattern(8, 20))
	}
}

func testFlushCancel(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapPutZcopy, "put zcopy")
	const n = 4096
	rm := h.RemoteMemory(64*n, !h.P.MDB.Attr().CanRegister)
	buf := pattern(min(n, h.AttrA.PutMaxZcopy), 5)
	var ops []*Op
	for i := 0; i < 64; i++ {
		o := NewOp()
		err := h.EP.PutZcopy([][]byte{buf}, rm.Mem.Address()+uint64(i*n), rm.RKey, &o.C)
		switch {
		case err == nil:
		case errors.Is(err, uct.ErrInProgress):
			ops = append(ops, o)
		case errors.Is(err, uct.ErrNoResource):
		default:
			t.Fatalf("put %d: %v", i, err)
		}
	}
	// Flush with cancel: every outstanding operation completes exactly
	// once, with nil (it had finished) or ErrCanceled, and so does the flush.
	err := h.Do("flush(cancel)", func(c *uct.Completion) error { return h.EP.Flush(true, c) })
	if err != nil && !errors.Is(err, uct.ErrCanceled) {
		t.Errorf("flush(cancel): %v, want nil or ErrCanceled", err)
	}
	h.Until("canceled operations complete", func() bool { return allDone(ops) })
	checkOnceCanceled(t, ops)
}

// checkOnceCanceled requires each op to have completed exactly once, with
// nil or ErrCanceled.
func checkOnceCanceled(t *testing.T, ops []*Op) {
	t.Helper()
	for i, o := range ops {
		if n := o.Calls(); n != 1 {
			t.Errorf("operation %d: completion invoked %d times, want exactly once", i, n)
		} else if err := o.Err(); err != nil && !errors.Is(err, uct.ErrCanceled) {
			t.Errorf("operation %d: completed with %v, want nil or ErrCanceled", i, err)
		}
	}
}
