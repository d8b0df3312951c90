package main

import (
	"testing"
	"time"
)

// countSide is a side that counts the progress calls it gets.
type countSide struct {
	gcProbeSide
	calls int
}

func (s *countSide) progress() { s.calls++ }

// A barrier progresses its side while it waits for a late peer, and at
// least once when the peer was there first, so that a send the side
// posted last leaves; once the run is over, it no longer does.
func TestBarrierProgressesSide(t *testing.T) {
	a, b := tcpPair(t)
	s := &countSide{}
	undo := progressBarriers(a, s)

	done := make(chan error, 1)
	go func() { done <- a.barrier() }()
	time.Sleep(5 * time.Millisecond) // the peer comes late: a polls meanwhile
	if err := b.barrier(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.calls == 0 {
		t.Fatal("the barrier did not progress its side while it waited for a late peer")
	}

	// The peer there first: one progress call all the same.
	s.calls = 0
	go func() { done <- b.barrier() }()
	time.Sleep(5 * time.Millisecond)
	if err := a.barrier(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.calls == 0 {
		t.Fatal("the barrier did not progress its side when the peer was there first")
	}

	undo()
	s.calls = 0
	go func() { done <- b.barrier() }()
	if err := a.barrier(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.calls != 0 {
		t.Fatalf("%d progress calls after the hook was removed", s.calls)
	}
}
