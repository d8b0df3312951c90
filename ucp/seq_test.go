package ucp

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
)

// foWorkers opens two workers with failover in mode m, each in a context
// of its own whose UCGO_TLS is tls; the test's cleanup closes them.
func foWorkers(t *testing.T, tls string, m failover.Mode, cfg Config) [2]*Worker {
	t.Helper()
	env := func(k string) string {
		if k == EnvTLS {
			return tls
		}
		return ""
	}
	cfg.Failover = failover.Policy{Mode: m}
	var ws [2]*Worker
	for i := range ws {
		uc, err := newContext(cfg, env)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { uc.Close() })
		w, err := uc.NewWorker()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		ws[i] = w
	}
	return ws
}

// driveAll progresses the workers until every request is done, failing
// the test after a generous bound.
func driveAll(t *testing.T, ws []*Worker, rs ...*Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		done := true
		for _, r := range rs {
			if !r.Done() {
				done = false
				break
			}
		}
		if done {
			return
		}
		for _, w := range ws {
			w.Progress()
		}
		if ctx.Err() != nil {
			n := 0
			for _, r := range rs {
				if !r.Done() {
					n++
				}
			}
			t.Fatalf("%d of %d requests not done", n, len(rs))
		}
	}
}

// seqPayload is message i of a stream: its index, then a pattern.
func seqPayload(i, n int) []byte {
	b := pattern(max(n, 8), byte(i))
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b[:max(n, 8)]
}

// streamSizes cover eager short, bcopy, the zero-copy range and
// rendezvous.
var streamSizes = []int{8, 200, 3000, 6000, 100000}

// TestSeqChannelOneLane: with failover on and one lane, every kind of
// operation travels through the sequenced channel: tag messages of every
// protocol arrive once and in order, active messages (one fragment,
// fragments, rendezvous) reach their handler once each, put, get and
// atomics complete with the right data, the acknowledgements keep the
// sender's log small and a flush empties it.
func TestSeqChannelOneLane(t *testing.T) {
	for _, tls := range []string{"shm", "rc"} {
		t.Run(tls, func(t *testing.T) {
			if tls == "rc" && !rcUsable() {
				t.Skip("no netdev other than loopback is up with IPv4")
			}
			ws := foWorkers(t, tls, failover.AnyTransport, Config{})
			all := ws[:]
			ep, err := ws[0].Connect(ws[1].Address(), EPParams{})
			if err != nil {
				t.Fatal(err)
			}
			if ep.fo == nil {
				t.Fatal("failover on, but the endpoint has no sequenced channel")
			}
			// tag stream, one tag, so that matching order is message order
			const n = 2000
			var sends, recvs []*Request
			bufs := make([][]byte, n)
			for i := 0; i < n; i++ {
				sz := streamSizes[i%len(streamSizes)]
				bufs[i] = make([]byte, sz)
				recvs = append(recvs, ws[1].TagRecv(bufs[i], 5, exact, nil))
				sends = append(sends, ep.TagSend(seqPayload(i, sz), 5, nil))
				if i%64 == 63 {
					driveAll(t, all, sends...)
				}
			}
			driveAll(t, all, append(sends, recvs...)...)
			for i, r := range recvs {
				if r.Err() != nil || sends[i].Err() != nil {
					t.Fatalf("message %d: recv %v, send %v", i, r.Err(), sends[i].Err())
				}
				if want := seqPayload(i, len(bufs[i])); !bytes.Equal(bufs[i], want) {
					t.Fatalf("message %d (%d bytes) arrived out of order or damaged: index %d", i, len(bufs[i]),
						binary.LittleEndian.Uint64(bufs[i]))
				}
			}
			if got := ep.fo.log.Next() - 1; got < n {
				t.Fatalf("%d sequenced messages for %d sends", got, n)
			}
			// the sender's log is kept small by acknowledgements alone
			ctx, cancel := testCtx()
			for ep.fo.log.Len() >= seqAckEvery && ctx.Err() == nil {
				ws[0].Progress()
				ws[1].Progress()
			}
			cancel()
			if l := ep.fo.log.Len(); l >= seqAckEvery {
				t.Fatalf("%d messages unacknowledged after the stream", l)
			}

			// active messages: one fragment, fragments, rendezvous
			got := map[int]int{}
			ws[1].SetAMHandler(9, func(m *AMMessage) {
				if m.Rndv {
					b := make([]byte, m.Length)
					m.RecvData(b, &Params{Callback: func(r *Request) {
						if r.Err() == nil {
							got[int(binary.LittleEndian.Uint64(b))]++
						}
					}})
					return
				}
				got[int(binary.LittleEndian.Uint64(m.Data))]++
			})
			var ams []*Request
			amSizes := []int{16, 20000, 300000}
			for i := 0; i < 60; i++ {
				ams = append(ams, ep.AMSend(9, []byte("h"), seqPayload(i, amSizes[i%3]), nil))
			}
			driveAll(t, all, ams...)
			ctx, cancel = testCtx()
			for len(got) < 60 && ctx.Err() == nil {
				ws[0].Progress()
				ws[1].Progress()
			}
			cancel()
			for i := 0; i < 60; i++ {
				if ams[i].Err() != nil || got[i] != 1 {
					t.Fatalf("active message %d: send %v, delivered %d times", i, ams[i].Err(), got[i])
				}
			}

			// put, get, atomics
			mem, err := ws[1].MemMap(make([]byte, 1<<20))
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Close()
			rk, err := ep.UnpackRKey(mem.PackRKey())
			if err != nil {
				t.Fatal(err)
			}
			defer rk.Close()
			src := pattern(1<<20, 3)
			driveAll(t, all, ep.Put(src, mem.Address(), rk, nil))
			back := make([]byte, 1<<20)
			driveAll(t, all, ep.Get(back, mem.Address(), rk, nil))
			if !bytes.Equal(mem.Bytes(), src) || !bytes.Equal(back, src) {
				t.Fatal("put or get moved the wrong bytes")
			}
			binary.LittleEndian.PutUint64(mem.Bytes()[64:], 0)
			var ars []*Request
			res := make([]uint64, 200)
			for i := range res {
				ars = append(ars, ep.AtomicFetch(AtomicAdd, 1, 0, &res[i], mem.Address()+64, rk, nil))
			}
			driveAll(t, all, ars...)
			seen := map[uint64]bool{}
			for i, r := range ars {
				if r.Err() != nil || seen[res[i]] || res[i] >= 200 {
					t.Fatalf("atomic %d: %v, fetched %d", i, r.Err(), res[i])
				}
				seen[res[i]] = true
			}
			if v := binary.LittleEndian.Uint64(mem.Bytes()[64:]); v != 200 {
				t.Fatalf("the word is %d after 200 adds", v)
			}
			if back := ws[1].byUUID[ws[0].uuid]; back == nil || back.fo == nil || ws[1].stats.AtomicsApplied != 200 {
				t.Fatal("the atomics did not travel as active messages")
			}
			fl := ep.Flush(nil)
			driveAll(t, all, fl)
			if fl.Err() != nil || ep.fo.log.Len() != 0 {
				t.Fatalf("flush: %v, %d messages unacknowledged", fl.Err(), ep.fo.log.Len())
			}
			if d := ws[1].Stats().Duplicates; d != 0 {
				t.Fatalf("%d duplicates without a fault", d)
			}
		})
	}
}

// TestSeqOffUnchanged: with failover off an endpoint has no sequenced
// channel.
func TestSeqOffUnchanged(t *testing.T) {
	ws := foWorkers(t, "shm", failover.Off, Config{})
	ep, err := ws[0].Connect(ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	r := ep.TagSend([]byte("x"), 1, nil)
	in := make([]byte, 1)
	driveAll(t, ws[:], r, ws[1].TagRecv(in, 1, exact, nil))
	if ep.fo != nil || r.Err() != nil || in[0] != 'x' {
		t.Fatalf("failover off: channel %v, send %v", ep.fo != nil, r.Err())
	}
}
