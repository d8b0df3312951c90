package uct

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEventQueueGetTryGet(t *testing.T) {
	q := NewEventQueue()
	if _, ok := q.TryGet(); ok {
		t.Fatal("TryGet on an empty queue returned an event")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := q.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get on an empty queue: %v, want deadline exceeded", err)
	}
	q.Post(&Event{Type: EventPortError, Object: "port eth0"})
	q.Post(&Event{Type: EventPortActive, Object: "port eth0"})
	if q.Len() != 2 {
		t.Fatalf("Len = %d", q.Len())
	}
	e, ok := q.TryGet()
	if !ok || e.Type != EventPortError {
		t.Fatalf("TryGet = %v, %v; want the first event", e, ok)
	}
	e.Ack()
	e.Ack() // extra acks do nothing
	e, err := q.Get(context.Background())
	if err != nil || e.Type != EventPortActive {
		t.Fatalf("Get = %v, %v", e, err)
	}
	e.Ack()
	if got := (&Event{Type: EventPeerFailed, Object: "ep pid 7", Err: ErrPeerFailed}).String(); got != "peer process failed on ep pid 7: peer process failed" {
		t.Errorf("Event.String = %q", got)
	}
	if EventType(99).String() != "event(99)" {
		t.Errorf("unknown event type: %q", EventType(99))
	}
}

func TestEventQueueGetBlocksUntilPost(t *testing.T) {
	q := NewEventQueue()
	got := make(chan *Event)
	go func() {
		e, err := q.Get(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- e
	}()
	want := &Event{Type: EventCQError}
	q.Post(want)
	select {
	case e := <-got:
		if e != want {
			t.Errorf("Get returned %v", e)
		}
		e.Ack()
	case <-time.After(10 * time.Second):
		t.Fatal("blocked Get not woken by Post")
	}
}

func TestEventQueueOneWaiterPerEvent(t *testing.T) {
	q := NewEventQueue()
	const waiters, events = 8, 200
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[*Event]int{}
	var wg sync.WaitGroup
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				e, err := q.Get(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				seen[e]++
				mu.Unlock()
				e.Ack()
			}
		}()
	}
	posted := make([]*Event, events)
	for i := range posted {
		posted[i] = &Event{Type: EventSRQLimitReached, Owner: "srq"}
		q.Post(posted[i])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, c := range seen {
			n += c
		}
		mu.Unlock()
		if n >= events || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	for e, n := range seen {
		if n != 1 {
			t.Errorf("event %p delivered %d times", e, n)
		}
	}
	if len(seen) != events {
		t.Errorf("%d distinct events delivered, want %d", len(seen), events)
	}
	if err := q.WaitAcks("srq", time.Second); err != nil {
		t.Errorf("WaitAcks after every event was acked: %v", err)
	}
}

func TestEventQueueAllDeliveredOnce(t *testing.T) {
	q := NewEventQueue()
	const waiters, events = 6, 300
	for i := 0; i < events; i++ {
		q.Post(&Event{Type: EventQPFatal, Owner: i % 3})
	}
	var mu sync.Mutex
	seen := map[*Event]int{}
	var wg sync.WaitGroup
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				e, ok := q.TryGet()
				if !ok {
					return
				}
				mu.Lock()
				seen[e]++
				mu.Unlock()
				e.Ack()
			}
		}()
	}
	wg.Wait()
	if len(seen) != events {
		t.Fatalf("%d distinct events delivered, want %d", len(seen), events)
	}
	for _, n := range seen {
		if n != 1 {
			t.Fatalf("an event was delivered %d times", n)
		}
	}
	for o := 0; o < 3; o++ {
		if err := q.WaitAcks(o, time.Second); err != nil {
			t.Errorf("WaitAcks(%d) after all acks: %v", o, err)
		}
	}
}

func TestEventQueueWaitAcks(t *testing.T) {
	q := NewEventQueue()
	owner := &struct{ n int }{}
	other := "other"
	q.Post(&Event{Type: EventQPFatal, Owner: owner})
	q.Post(&Event{Type: EventQPFatal, Owner: other})
	q.Post(&Event{Type: EventSQDrained, Owner: owner})
	e, _ := q.TryGet() // delivered, not acked
	// Unacked: bounded wait fails with ErrTimedOut.
	err := q.WaitAcks(owner, 30*time.Millisecond)
	if !errors.Is(err, ErrTimedOut) || !strings.Contains(err.Error(), "1 async events") {
		t.Fatalf("WaitAcks with one unacked event: %v", err)
	}
	// The never-delivered event of owner was discarded; other's remains.
	if q.Len() != 1 {
		t.Fatalf("Len after WaitAcks = %d, want 1 (only the other owner's)", q.Len())
	}
	done := make(chan error, 1)
	go func() { done <- q.WaitAcks(owner, 10*time.Second) }()
	time.Sleep(5 * time.Millisecond)
	e.Ack()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("WaitAcks after the ack: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitAcks not woken by Ack")
	}
	if o, ok := q.TryGet(); !ok || o.Owner != other {
		t.Errorf("other owner's event lost: %v %v", o, ok)
	}
	// Nothing of an unknown owner: immediate success.
	if err := q.WaitAcks("nobody", 0); err != nil {
		t.Errorf("WaitAcks(nobody) = %v", err)
	}
}

func TestEventQueueClose(t *testing.T) {
	q := NewEventQueue()
	errc := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { _, err := q.Get(context.Background()); errc <- err }()
	}
	time.Sleep(5 * time.Millisecond)
	q.Close()
	q.Close()
	for i := 0; i < 3; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Get after Close: %v, want ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not wake Get")
		}
	}
	q.Post(&Event{Type: EventDeviceFatal})
	if q.Len() != 0 {
		t.Error("Post to a closed queue kept the event")
	}
	if _, err := q.Get(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Get on a closed queue: %v", err)
	}
}

func TestDefaultErrorHandlerText(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	DefaultErrorHandler(nil, nil, NewOpError("shm", "am_short", "pid 9", ErrPeerFailed, nil))
	if !strings.Contains(buf.String(), "peer process failed") {
		t.Errorf("log line %q does not name the error", buf.String())
	}
}

func TestEventQueueZeroValue(t *testing.T) {
	var q EventQueue
	if _, ok := q.TryGet(); ok || q.Len() != 0 {
		t.Fatal("zero queue is not empty")
	}
	q.Post(&Event{Type: EventPortActive, Owner: "p"})
	e, err := q.Get(context.Background())
	if err != nil || e.Type != EventPortActive {
		t.Fatalf("Get = %v, %v", e, err)
	}
	e.Ack()
	if err := q.WaitAcks("p", time.Second); err != nil {
		t.Errorf("WaitAcks: %v", err)
	}
	var closed EventQueue
	closed.Close()
	if _, err := closed.Get(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Get on a closed zero queue: %v", err)
	}
}
