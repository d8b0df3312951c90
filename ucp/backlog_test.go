package ucp

import (
	"encoding/binary"
	"testing"
	"time"
)

// TestBacklogFullLaneNoAlloc: a sender whose shm lane is full keeps its
// endpoint on the backlog, and every Progress tries it again; retrying
// allocates nothing (the backlog's array is reused), and once the
// receiver drains its FIFO every message arrives, in order.
func TestBacklogFullLaneNoAlloc(t *testing.T) {
	ws, ep := shmPair(t, Config{})
	tx, rx := ws[0], ws[1]
	got := make([]byte, 8)
	deadline := time.Now().Add(30 * time.Second)
	// one message first, so that the endpoint is wired up
	r := rx.TagRecv(got, 8, exact, nil)
	s := ep.TagSend(got, 8, nil)
	for !r.Done() || !s.Done() {
		tx.Progress()
		rx.Progress()
		if time.Now().After(deadline) {
			t.Fatal("the first message did not arrive")
		}
	}
	r.Release()
	s.Release()

	const n = 4096 // more than the FIFO holds
	var sends []*Request
	for i := 0; i < n; i++ {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		if r := ep.TagSend(b[:], 9, nil); r != nil {
			sends = append(sends, r)
		}
	}
	if len(sends) == 0 {
		t.Fatalf("all %d sends went at once: the lane never refused one", n)
	}
	tx.Progress()
	tx.lock()
	queued := len(tx.backlog)
	tx.unlock()
	if queued == 0 {
		t.Fatal("the endpoint is not on the backlog with its lane full")
	}
	if a := testing.AllocsPerRun(100, func() { tx.Progress() }); a != 0 {
		t.Errorf("a Progress retrying the backlog allocates %v times", a)
	}

	for i := 0; i < n; i++ {
		r := rx.TagRecv(got, 9, exact, nil)
		for !r.Done() {
			tx.Progress()
			rx.Progress()
			if time.Now().After(deadline) {
				t.Fatalf("message %d of %d did not arrive", i, n)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if v := binary.LittleEndian.Uint64(got); v != uint64(i) {
			t.Fatalf("message %d carries %d", i, v)
		}
		r.Release()
	}
	for i, s := range sends {
		for !s.Done() {
			tx.Progress()
			rx.Progress()
			if time.Now().After(deadline) {
				t.Fatalf("queued send %d did not complete", i)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("queued send %d: %v", i, err)
		}
		s.Release()
	}
}
