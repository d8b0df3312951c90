package uct

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// bigOwner prints as a very large string, like an endpoint whose fields
// hold megabytes of mapped memory.
type bigOwner struct{ buf []byte }

// TestWaitAcksShortErrorAndCancel: the error of a WaitAcks that gave up
// names the owner by its type, not its printed value, and a canceled
// context ends the wait.
func TestWaitAcksShortErrorAndCancel(t *testing.T) {
	q := NewEventQueue()
	owner := &bigOwner{buf: make([]byte, 1<<20)}
	q.Post(&Event{Type: EventQPFatal, Owner: owner})
	ev, ok := q.TryGet()
	if !ok {
		t.Fatal("no event")
	}
	err := q.WaitAcks(owner, 10*time.Millisecond)
	if !errors.Is(err, ErrTimedOut) {
		t.Fatalf("WaitAcks with an unacked event: %v", err)
	}
	if len(err.Error()) > 200 || !strings.Contains(err.Error(), "*uct.bigOwner") {
		t.Fatalf("error of %d bytes: %.200q", len(err.Error()), err.Error())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.WaitAcksContext(ctx, owner) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrTimedOut) {
			t.Fatalf("canceled WaitAcksContext: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitAcksContext ignored its canceled context")
	}
	ev.Ack()
	if err := q.WaitAcksContext(context.Background(), owner); err != nil {
		t.Fatalf("after the ack: %v", err)
	}
}
