package ucttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func testArmWaitWake(t *testing.T, h *Harness) {
	// Wake makes a concurrent Wait return (before its context ends).
	if err := h.P.A.Arm(); err != nil && !errors.Is(err, uct.ErrBusy) {
		t.Fatalf("Arm: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.P.A.Wait(ctx) }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
wake:
	for {
		h.P.A.Wake()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait woken by Wake returned %v", err)
			}
			break wake
		case <-tick.C:
		}
	}

	// An armed iface is woken by an incoming message; Arm refuses to arm
	// (ErrBusy) while one is waiting.
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	if !h.AttrB.Cap.Has(uct.CapEventRecv) {
		t.Skip("iface lacks CapEventRecv: receives do not wake Wait")
	}
	r := h.setAM(10, nil)
	for i := 0; i < 100; i++ {
		h.Progress()
	}
	h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(10, []byte{42}, nil); return err })
	for i := 0; ; i++ {
		h.P.A.Progress() // the sender may need progress to push the message out
		err := h.P.B.Arm()
		if errors.Is(err, uct.ErrBusy) {
			break
		}
		if err != nil {
			t.Fatalf("Arm: %v", err)
		}
		wctx, wcancel := context.WithTimeout(ctx, Timeout)
		err = h.P.B.Wait(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("armed iface with a message on its way: Wait returned %v", err)
		}
		if i > 1000 {
			t.Fatal("Arm never reported the waiting message (ErrBusy)")
		}
		if h.P.B.Progress() > 0 {
			break
		}
	}
	h.Until("message after wake-up", func() bool { return r.n() == 1 })
}
