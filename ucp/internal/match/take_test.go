package match

import "testing"

func TestTakeRecv(t *testing.T) {
	m := newTest(Suspend, 1, 2)
	// nothing posted: nil, and nothing is queued until Queue
	if r := m.TakeRecv(tg(1, 5)); r != nil {
		t.Fatalf("TakeRecv with nothing posted = %v", r.Data)
	}
	if p, u := m.Len(); p != 0 || u != 0 {
		t.Fatalf("Len after an unmatched TakeRecv = %d, %d; want 0, 0", p, u)
	}
	early := ms("early", 1, 5)
	m.Queue(early)
	if !early.Queued() {
		t.Fatal("Queue left the message unqueued")
	}
	// a queued message is found by the next receive, as one from Arrive
	r0 := rv("r0", tg(1, 5), exact)
	if got := m.PostRecv(r0); got != early {
		t.Fatalf("PostRecv after Queue = %v, want early", got)
	}
	// the earliest posted of two matching receives, removed
	wild := rv("wild", tg(0, 5), anySrc)
	spec := rv("spec", tg(1, 5), exact)
	m.PostRecv(wild)
	m.PostRecv(spec)
	if r := m.TakeRecv(tg(1, 5)); r != wild || wild.Posted() {
		t.Fatalf("TakeRecv = %v (posted %v), want wild, unposted", r, wild.Posted())
	}
	// suspended: no match, the message is left to Queue
	if m.AnyDown() {
		t.Fatal("AnyDown before any failure")
	}
	m.Fail(2)
	if !m.AnyDown() {
		t.Fatal("AnyDown false after Fail(2)")
	}
	if r := m.TakeRecv(tg(1, 5)); r != nil || !spec.Posted() {
		t.Fatalf("TakeRecv while suspended = %v", r)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Queue of a queued message did not panic")
		}
	}()
	x := ms("x", 1, 5)
	m.Queue(x)
	m.Queue(x)
}
