package verbs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// getEvent drives the devices until an event of type typ arrives on d and
// returns it without acking it; other events are acked.
func getEvent(t *testing.T, d *Device, typ uct.EventType, devs ...*Device) *uct.Event {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		for _, x := range devs {
			x.Progress()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		ev, err := d.Events().Get(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != nil {
			t.Fatalf("get event: %v", err)
		}
		if ev.Type == typ {
			return ev
		}
		ev.Ack()
	}
	t.Fatalf("no %v event", typ)
	return nil
}

// closeBlocks starts close and checks that it is still waiting after a
// while; ack then lets it finish, with nil.
func closeBlocks(t *testing.T, what string, close func() error, ack func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- close() }()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while its event was not acked", what, err)
	case <-time.After(200 * time.Millisecond):
	}
	ack()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s after the ack: %v", what, err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("%s did not return after the ack", what)
	}
}

// TestDestroyWaitsForAcks: destroying a QP or a CQ waits until the async
// events it owns that were received have been acked (ibv_destroy_qp,
// ibv_destroy_cq); CloseContext bounds the wait.
func TestDestroyWaitsForAcks(t *testing.T) {
	a, b := pair(t, rigOpts{cqe: 4})
	var wrs []SendWR
	for i := 0; i < 6; i++ {
		wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 8)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()})
	}
	if _, err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	cqEv := getEvent(t, a.d, uct.EventCQError, a.d, b.d)
	qpEv := getEvent(t, a.d, uct.EventQPFatal, a.d, b.d)
	if cqEv.Owner != a.cq || qpEv.Owner != a.qp {
		t.Fatalf("owners %v, %v", cqEv.Owner, qpEv.Owner)
	}
	// A canceled wait gives up at once with a short error; the QP is
	// destroyed all the same.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.qp.CloseContext(ctx)
	if !errors.Is(err, uct.ErrTimedOut) || !errors.Is(err, context.Canceled) || len(err.Error()) > 200 {
		t.Fatalf("CloseContext with a canceled context: %v", err)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 9, Opcode: WRSend}); !errors.Is(err, uct.ErrClosed) && !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("post on a destroyed QP: %v", err)
	}
	closeBlocks(t, "QP.Close", a.qp.Close, qpEv.Ack)
	closeBlocks(t, "CQ.Close", a.cq.Close, cqEv.Ack)
	// Events that nobody received do not hold Close up.
	if _, err := b.qp.PostSend(wrs[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Close(); err != nil {
		t.Fatal(err)
	}
}
