package ucp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
)

func init() {
	// mt: serve a thread-safe peer's mixed traffic: expose 1 MiB of
	// registered memory and 4 KiB of allocated memory (keys sent with
	// tagKeys), answer every amPing with amPong (header and data
	// reversed), echo every tag message until tagQuit.
	childRoles["mt"] = func(nd *node) error {
		reg := make([]byte, 1<<20)
		mr, err := nd.w.MemMap(reg)
		if err != nil {
			return err
		}
		defer mr.Close()
		ma, err := nd.w.MemAlloc(4096)
		if err != nil {
			return err
		}
		defer ma.Close()
		nd.w.SetAMHandler(amPing, func(m *AMMessage) {
			m.Reply.AMSend(amPong, append([]byte(nil), m.Data...), append([]byte(nil), m.Header...), nil).Release()
		})
		var msg []byte
		for _, m := range []*Mem{mr, ma} {
			k := m.PackRKey()
			msg = binary.LittleEndian.AppendUint64(msg, m.Address())
			msg = binary.LittleEndian.AppendUint16(msg, uint16(len(k)))
			msg = append(msg, k...)
		}
		if err := nd.wait(nd.eps[0].TagSend(msg, mkTag(nd.rank, tagKeys), nil)); err != nil {
			return err
		}
		return childRoles["echo"](nd)
	}
}

// TestThreadSafeRC drives one thread-safe worker (Config.ThreadSafe) over
// an rc lane between two network namespaces from several goroutines at
// once: two send and receive tag messages of every protocol, one puts and
// gets back its own region of the peer's memory and counts with a
// fetching atomic, one exchanges active messages (whose handler sends a
// tag message, echoed by the peer), one flushes the
// endpoint and the worker, and one more calls Progress and Wait in a
// loop. Every byte is checked; run with -race, any access to the rc
// iface or endpoint outside its transport lock is reported.
func TestThreadSafeRC(t *testing.T) {
	cfg := Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1, ThreadSafe: true}
	threadSafeTraffic(t, netnsWorld(t, "mt", cfg, EnvErrMode+"=peer"))
}

// TestThreadSafeShm is TestThreadSafeRC over shm between two processes.
func TestThreadSafeShm(t *testing.T) {
	cfg := Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1, ThreadSafe: true}
	nd := world(t, 2, "mt", cfg, EnvErrMode+"=peer")
	if tr := nd.eps[1].lanes[0].attr.Transport; tr != "shm" {
		t.Fatalf("lane over %s; want shm", tr)
	}
	threadSafeTraffic(t, nd)
}

func threadSafeTraffic(t *testing.T, nd *node) {
	ep, w := nd.eps[1], nd.w
	keys := recvKeys(t, nd, 1)

	const iters = 60
	// The pong handler also sends the pong's data back to the peer as a
	// tag message (tagAMEcho), which the peer echoes: an operation started
	// inside the transports' progress, holding the transport lock.
	const tagAMEcho = 3000
	pongs := make(chan [2][]byte, 16)
	w.SetAMHandler(amPong, func(m *AMMessage) {
		p := [2][]byte{append([]byte(nil), m.Header...), append([]byte(nil), m.Data...)}
		m.Reply.TagSend(p[0], mkTag(0, tagAMEcho), nil).Release()
		pongs <- p
	})
	ctx, cancel := testCtx()
	defer cancel()
	wait := func(r *Request) error {
		err := r.Wait(ctx)
		r.Release()
		return err
	}

	// the progress goroutine
	pctx, pstop := context.WithCancel(ctx)
	progDone := make(chan struct{})
	go func() {
		defer close(progDone)
		for pctx.Err() == nil {
			if w.Progress() == 0 {
				w.Wait(pctx)
			}
		}
	}()

	var wg sync.WaitGroup
	var dumped sync.Once
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		dumped.Do(func() {
			w.lock()
			st := ep.stateDump()
			w.unlock()
			c := rcCounters(nd.ctx)
			t.Logf("endpoint: %s; rc: retransmits %d timeouts %d read retries %d dropped rx %d tx %d watchdog runs %d",
				st, c.Retransmits, c.Timeouts, c.ReadRetries, c.RxDropped, c.TxDropped, c.WatchdogRuns)
		})
	}
	sizes := []int{0, 8, 200, 4000, 8000, 20000, 100000}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				n := sizes[(i+g)%len(sizes)]
				low := uint32(1000 + g)
				out := pattern(n, byte(i+g))
				in := make([]byte, n+1)
				r := w.TagRecv(in, mkTag(1, low), exact, nil)
				if err := wait(ep.TagSend(out, mkTag(0, low), nil)); err != nil {
					fail("tag %d/%d: send %d bytes: %v", g, i, n, err)
					return
				}
				if err := r.Wait(ctx); err != nil {
					fail("tag %d/%d: receive %d bytes: %v", g, i, n, err)
					return
				}
				if got := r.Info().Length; got != n || !bytes.Equal(in[:n], out) {
					fail("tag %d/%d: echo of %d bytes differs (length %d)", g, i, n, got)
					return
				}
				r.Release()
			}
		}()
	}
	wg.Add(1)
	go func() { // put, get back, atomics
		defer wg.Done()
		const region = 64 << 10
		var old uint64
		for i := 0; i < iters; i++ {
			n := []int{8, 3000, region}[i%3]
			off := uint64(i%4) * region
			out := pattern(n, byte(3*i))
			if err := wait(ep.Put(out, keys[0].addr+off, keys[0].key, nil)); err != nil {
				fail("put %d: %v", i, err)
				return
			}
			if err := wait(ep.Flush(nil)); err != nil {
				fail("flush after put %d: %v", i, err)
				return
			}
			in := make([]byte, n)
			if err := wait(ep.Get(in, keys[0].addr+off, keys[0].key, nil)); err != nil {
				fail("get %d: %v", i, err)
				return
			}
			if !bytes.Equal(in, out) {
				fail("get %d: %d bytes differ from those put", i, n)
				return
			}
			if err := wait(ep.AtomicFetch(AtomicAdd, 1, 0, &old, keys[1].addr, keys[1].key, nil)); err != nil {
				fail("atomic %d: %v", i, err)
				return
			}
			if old != uint64(i) {
				fail("atomic %d: fetched %d", i, old)
				return
			}
		}
	}()
	wg.Add(1)
	go func() { // active messages, answered by the peer's handler
		defer wg.Done()
		for i := 0; i < iters; i++ {
			hdr := pattern(1+i%16, byte(i))
			data := pattern([]int{0, 10, 1000, 5000}[i%4], byte(i+1))
			echo := make([]byte, len(data)+1)
			er := w.TagRecv(echo, mkTag(1, tagAMEcho), exact, nil)
			if err := wait(ep.AMSend(amPing, hdr, data, nil)); err != nil {
				fail("am %d: %v", i, err)
				return
			}
			select {
			case p := <-pongs:
				if !bytes.Equal(p[0], data) || !bytes.Equal(p[1], hdr) {
					fail("am %d: reply differs", i)
					return
				}
			case <-ctx.Done():
				fail("am %d: no reply", i)
				return
			}
			if err := er.Wait(ctx); err != nil {
				fail("am %d: echo of the handler's tag send: %v", i, err)
				return
			}
			if got := er.Info().Length; got != len(data) || !bytes.Equal(echo[:got], data) {
				fail("am %d: echo of the handler's tag send differs (length %d)", i, got)
				return
			}
			er.Release()
		}
	}()
	wg.Add(1)
	go func() { // flushes
		defer wg.Done()
		for i := 0; i < iters; i++ {
			r := ep.Flush(nil)
			if i%2 == 1 {
				r.Release()
				r = w.Flush(nil)
			}
			if err := wait(r); err != nil {
				fail("flush %d: %v", i, err)
				return
			}
		}
	}()
	wg.Wait()
	pstop()
	w.Wake()
	<-progDone
	if t.Failed() {
		return
	}
	if ctx.Err() != nil {
		t.Fatal(fmt.Errorf("thread-safe traffic: %w", ctx.Err()))
	}
	nd.quit(1)
	nd.exitOK(1)
}
