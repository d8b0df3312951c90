package ucp

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
)

// progressUntil progresses both workers until cond holds (bounded).
func progressUntil(t *testing.T, ws [2]*Worker, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatal("no progress in 20 s")
		}
		ws[0].Progress()
		ws[1].Progress()
	}
}

// recvOne receives one message of tag on ws[1] and checks its bytes.
func recvOne(t *testing.T, ws [2]*Worker, tag uint64, want []byte) {
	t.Helper()
	in := make([]byte, len(want)+8)
	r := ws[1].TagRecv(in, tag, exact, nil)
	progressUntil(t, ws, r.Done)
	if err := r.Err(); err != nil || r.Info().Length != len(want) || !bytes.Equal(in[:len(want)], want) {
		t.Fatalf("received %d bytes (%v), want %d: %x", r.Info().Length, err, len(want), in[:r.Info().Length])
	}
	r.Release()
}

// A nil *Request is a request that completed with success.
func TestNilRequest(t *testing.T) {
	var r *Request
	if !r.Done() || r.Err() != nil || r.Info() != (Info{}) || r.UserData() != nil || r.Cancel() {
		t.Fatal("a nil request is not a completed one")
	}
	if done, err := r.Test(); !done || err != nil {
		t.Fatalf("Test: %v, %v", done, err)
	}
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Release()
}

// An eager tag send that completes inside the call returns no request
// unless Params ask for one (a callback, user data); one that cannot go at
// once (before wireup, rendezvous) returns its request.
func TestTagSendImmediateNoRequest(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"failover-off", Config{}},
		{"failover-on", Config{ErrorMode: ErrorModePeer, Failover: failover.Policy{Mode: failover.SameTransport}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws, ep := shmPair(t, c.cfg)
			// before the wireup answer the send is queued: a request
			first := pattern(8, 1)
			s := ep.TagSend(first, 3, nil)
			if s == nil {
				t.Fatal("a send queued before wireup returned no request")
			}
			recvOne(t, ws, 3, first)
			progressUntil(t, ws, s.Done)
			s.Release()

			for _, size := range []int{0, 8, 200, 2000} {
				out := pattern(size, byte(size))
				if s := ep.TagSend(out, 4, nil); s != nil {
					t.Fatalf("%d bytes: a send that completed at once returned a request (done %v)", size, s.Done())
				}
				if c.cfg.Failover.Mode != failover.Off {
					// the message is kept for replay until the peer acknowledges it
					if ep.fo == nil || ep.fo.log.Len() == 0 {
						t.Fatalf("%d bytes: the sequenced send is not in the replay log", size)
					}
				}
				copy(out, make([]byte, size)) // the buffer is free at once
				recvOne(t, ws, 4, pattern(size, byte(size)))
			}

			// Params with a callback: a request, and its callback once,
			// from Progress
			calls := 0
			s = ep.TagSend(pattern(8, 5), 5, &Params{Callback: func(*Request) { calls++ }})
			if s == nil {
				t.Fatal("a send with a callback returned no request")
			}
			if calls != 0 {
				t.Fatal("the callback ran inside TagSend")
			}
			recvOne(t, ws, 5, pattern(8, 5))
			progressUntil(t, ws, func() bool { return calls > 0 })
			ws[0].Progress()
			if calls != 1 || !s.Done() || s.Err() != nil {
				t.Fatalf("callback ran %d times, done %v, err %v", calls, s.Done(), s.Err())
			}
			s.Release()

			// Params with user data only: a request that carries it
			s = ep.TagSend(pattern(8, 6), 6, &Params{UserData: "u"})
			if s == nil || s.UserData() != "u" {
				t.Fatalf("a send with user data returned %v", s)
			}
			recvOne(t, ws, 6, pattern(8, 6))
			progressUntil(t, ws, s.Done)
			s.Release()
		})
	}
}

// An active message of one fragment that went at once returns no request
// unless Params ask for one; a larger one returns its request.
func TestAMSendImmediateNoRequest(t *testing.T) {
	ws, ep := shmPair(t, Config{})
	var got [][]byte
	ws[1].SetAMHandler(7, func(m *AMMessage) { got = append(got, append(m.Header[:len(m.Header):len(m.Header)], m.Data...)) })
	// wireup first: the first message is queued
	s := ep.AMSend(7, []byte("h"), []byte("0"), nil)
	if s == nil {
		t.Fatal("an AM queued before wireup returned no request")
	}
	progressUntil(t, ws, func() bool { return s.Done() && len(got) == 1 })
	s.Release()
	if s := ep.AMSend(7, []byte("h"), []byte("1"), nil); s != nil {
		t.Fatalf("an AM sent at once returned a request (done %v)", s.Done())
	}
	progressUntil(t, ws, func() bool { return len(got) == 2 })
	if string(got[1]) != "h1" {
		t.Fatalf("received %q", got[1])
	}
	calls := 0
	s = ep.AMSend(7, nil, []byte("2"), &Params{Callback: func(*Request) { calls++ }})
	if s == nil {
		t.Fatal("an AM with a callback returned no request")
	}
	progressUntil(t, ws, func() bool { return calls == 1 && len(got) == 3 })
	s.Release()
	big := ep.AMSend(7, nil, make([]byte, ep.MaxAM()+1), nil)
	if big == nil {
		t.Fatal("an AM of several fragments returned no request")
	}
	progressUntil(t, ws, func() bool { return big.Done() && len(got) == 4 })
	if err := big.Err(); err != nil {
		t.Fatal(err)
	}
	big.Release()
}

// A put that fits the lane's short limit and went at once returns no
// request unless Params ask for one; its bytes are in the peer's memory.
func TestPutImmediateNoRequest(t *testing.T) {
	ws, ep := shmPair(t, Config{})
	mem, err := ws[1].MemAlloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	rk, err := ep.UnpackRKey(mem.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	// wireup first
	s := ep.TagSend(nil, 1, nil)
	recvOne(t, ws, 1, nil)
	progressUntil(t, ws, s.Done)
	s.Release()
	out := pattern(64, 9)
	if r := ep.Put(out, mem.Address()+8, rk, nil); r != nil {
		t.Fatalf("a short put that went at once returned a request (done %v, err %v)", r.Done(), r.Err())
	}
	if !bytes.Equal(mem.Bytes()[8:72], pattern(64, 9)) {
		t.Fatal("the put's bytes are not in the peer's memory")
	}
	calls := 0
	r := ep.Put(out[:8], mem.Address(), rk, &Params{Callback: func(*Request) { calls++ }})
	if r == nil {
		t.Fatal("a put with a callback returned no request")
	}
	progressUntil(t, ws, func() bool { return calls == 1 })
	r.Release()
	// a put beyond the key's range still fails on its request
	bad := ep.Put(out, mem.Address()+4096, rk, nil)
	if bad == nil {
		t.Fatal("a put outside the registration returned no request")
	}
	progressUntil(t, ws, bad.Done)
	if bad.Err() == nil {
		t.Fatal("a put outside the registration succeeded")
	}
	bad.Release()
}
