package ucp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// Chunked transfers under back-pressure. Transfers above the lane's zcopy
// limit (1 GiB on rc) move in chunks; Config.chunkMax lowers the limit so
// that a few MiB make thousands of chunks, more than an rc send queue
// holds (256), and the lane refuses some with uct.ErrNoResource.

const testChunk = 1024

func init() {
	// rndvsend: send one 4 MiB tagData message to rank 0, then serve
	// until tagQuit.
	childRoles["rndvsend"] = func(nd *node) error {
		s := nd.eps[0].TagSend(pattern(4<<20, 7), mkTag(nd.rank, tagData), nil)
		if err := nd.waitQuit(); err != nil {
			return err
		}
		return s.Err()
	}
}

// stalls returns the number of chunked transfers that met back-pressure.
func stalls(w *Worker) int {
	w.lock()
	defer w.unlock()
	return w.chunkStalls
}

// TestChunkStallRC sends rendezvous messages (get and put), eager ones
// between them, and RMA over rc in 1 KiB chunks: the lane refuses chunks
// for lack of send queue room, the transfers wait and resume, and every
// byte arrives, in order.
func TestChunkStallRC(t *testing.T) {
	for _, c := range []struct {
		name   string
		scheme RndvScheme
	}{{"get", RndvGet}, {"put", RndvPut}} {
		t.Run(c.name, func(t *testing.T) {
			nd := netnsWorld(t, "echo", Config{RndvScheme: c.scheme, chunkMax: testChunk}, EnvRndvScheme+"="+c.name)
			ep := nd.eps[1]
			sizes := []int{4 << 20, 100, 3<<20 + 5, 4<<20 - 3, 8}
			var outs, ins [][]byte
			var sends, recvs []*Request
			// all sends at once: the echo returns them one by one, with
			// the same tag, in the order they were sent
			for i, n := range sizes {
				outs = append(outs, pattern(n, byte(i+1)))
				ins = append(ins, make([]byte, n))
				recvs = append(recvs, nd.w.TagRecv(ins[i], mkTag(1, tagData), exact, nil))
			}
			for i := range sizes {
				sends = append(sends, ep.TagSend(outs[i], mkTag(0, tagData), nil))
			}
			for i := range sizes {
				nd.must(nd.wait(sends[i]))
				nd.must(nd.wait(recvs[i]))
				if got := recvs[i].Info().Length; got != sizes[i] {
					t.Fatalf("message %d: length %d, want %d", i, got, sizes[i])
				}
				if !bytes.Equal(ins[i], outs[i]) {
					t.Fatalf("message %d (%d bytes): content differs", i, sizes[i])
				}
			}
			if stalls(nd.w) == 0 {
				t.Fatalf("no transfer met back-pressure in %d-byte chunks", testChunk)
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
	t.Run("rma", func(t *testing.T) {
		nd := netnsWorld(t, "rma", Config{chunkMax: testChunk})
		ep := nd.eps[1]
		keys := recvKeys(t, nd, 1)
		reg := keys[0]
		in := make([]byte, 1<<20)
		nd.must(nd.wait(ep.Get(in, reg.addr, reg.key, nil)))
		if !bytes.Equal(in, pattern(len(in), 5)) {
			t.Fatal("get: content differs")
		}
		before := stalls(nd.w)
		out := pattern(len(in), 9)
		put := ep.Put(out, reg.addr, reg.key, nil)
		get := ep.Get(in, reg.addr, reg.key, nil) // queued behind the put's chunks
		nd.must(nd.wait(put))
		nd.must(nd.wait(get))
		if !bytes.Equal(in, out) {
			t.Fatal("get after put: content differs")
		}
		if before == 0 || stalls(nd.w) == before {
			t.Fatalf("stalls %d then %d: the RMA chunks met no back-pressure", before, stalls(nd.w))
		}
		nd.quit(1)
		nd.exitOK(1)
	})
}

// TestChunkStallFailRC stalls a rendezvous receive for certain: the
// sender is stopped (SIGSTOP), so none of the receiver's READs is
// answered and the send queue stays full. A send started behind it waits
// in order. Then the sender either continues (the transfer resumes and
// completes) or is killed (the receive completes once, with the
// endpoint's failure, and the send behind it fails).
func TestChunkStallFailRC(t *testing.T) {
	for _, how := range []string{"resume", "kill"} {
		t.Run(how, func(t *testing.T) {
			nd := netnsWorld(t, "rndvsend", Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1, chunkMax: testChunk},
				EnvErrMode+"=peer")
			ep := nd.eps[1]
			tag := mkTag(1, tagData)
			nd.progressUntil("the rendezvous announcement", func() bool {
				_, ok := nd.w.TagProbe(tag, exact)
				return ok
			})
			nd.stopChild(1)
			calls := 0
			buf := make([]byte, 4<<20)
			r := nd.w.TagRecv(buf, tag, exact, &Params{Callback: func(*Request) { calls++ }})
			after := ep.TagSend([]byte("after"), mkTag(0, tagX), nil)
			for i := 0; i < 100; i++ {
				nd.w.Progress()
			}
			nd.w.lock()
			stalled, queued := ep.stalled.n, ep.queue.n
			nd.w.unlock()
			if r.Done() || after.Done() || stalled != 1 || queued != 1 {
				t.Fatalf("receive done %v (%v), send done %v (%v), %d stalled, %d queued; want the receive stalled, the send queued",
					r.Done(), r.Err(), after.Done(), after.Err(), stalled, queued)
			}
			if how == "resume" {
				nd.must(nd.procs[1].Process.Signal(syscallSIGCONT))
				nd.must(nd.wait(r))
				nd.must(nd.wait(after))
				if !bytes.Equal(buf, pattern(len(buf), 7)) {
					t.Fatal("content differs")
				}
				nd.quit(1)
				nd.exitOK(1)
			} else {
				nd.kill(1)
				err := nd.wait(r)
				if err == nil || errors.Is(err, uct.ErrNoResource) {
					t.Fatalf("receive: %v; want the endpoint's failure", err)
				}
				if ep.Err() == nil || !errors.Is(err, uct.StatusOf(ep.Err())) {
					t.Fatalf("receive: %v; endpoint: %v", err, ep.Err())
				}
				// canceled while queued, or failed by the lane if it was
				// dispatched before the failure was known
				if err := nd.wait(after); !errors.Is(err, uct.ErrCanceled) && !errors.Is(err, uct.StatusOf(ep.Err())) {
					t.Fatalf("send behind the stalled receive: %v; want canceled or %v", err, ep.Err())
				}
				t.Logf("receive: %v", err)
			}
			for i := 0; i < 100; i++ {
				nd.w.Progress()
			}
			if calls != 1 {
				t.Fatalf("receive callback ran %d times", calls)
			}
		})
	}
}
