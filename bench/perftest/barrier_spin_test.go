package main

import (
	"net"
	"testing"
	"time"
)

// tcpPair connects two tcpOOBs over loopback.
func tcpPair(t *testing.T) (a, b *tcpOOB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			acc <- nil
			return
		}
		acc <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-acc
	if s == nil {
		t.Fatal("accept failed")
	}
	a, b = newTCPOOB(c), newTCPOOB(s)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A barrier returns once both sides reached it, whether the peer comes
// while this side polls its connection, after it gave up polling and
// blocks, or was there first; barriers follow each other in order.
func TestBarrierLatePeer(t *testing.T) {
	a, b := tcpPair(t)
	for _, late := range []time.Duration{0, 5 * time.Millisecond, 3 * barrierSpin} {
		for _, first := range []*tcpOOB{a, b} {
			other := a
			if first == a {
				other = b
			}
			done := make(chan error, 1)
			go func() { done <- first.barrier() }()
			time.Sleep(late)
			if err := other.barrier(); err != nil {
				t.Fatalf("late %v: %v", late, err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("late %v: %v", late, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("late %v: the first side never left the barrier", late)
			}
		}
	}
	// a peer that closed ends the barrier with an error, polling or not
	done := make(chan error, 1)
	go func() { done <- a.barrier() }()
	b.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("barrier with a closed peer succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("barrier with a closed peer did not return")
	}
}
