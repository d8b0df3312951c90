package ucttest

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Bench runs the standard uct benchmarks on a pair from f: 8-byte AM short
// ping-pong (one-way latency reported as ns/one-way), AM short message rate
// (msg/s) and put bandwidth at 1 MiB (MB/s). Both ifaces are driven from
// the benchmark goroutine, so the figures include both sides' progress.
func Bench(b *testing.B, f Factory) {
	b.Run("AMShortPingPong8", func(b *testing.B) { benchPingPong(b, f) })
	b.Run("AMShortRate8", func(b *testing.B) { benchRate(b, f) })
	b.Run("Put1MiB", func(b *testing.B) { benchPut(b, f) })
}

func benchPingPong(b *testing.B, f Factory) {
	h := NewHarness(b, f)
	h.NeedCap(uct.CapAMShort, "AM short")
	back, err := h.P.B.Connect(h.P.A.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		b.Fatalf("connect B to A: %v", err)
	}
	b.Cleanup(func() { _ = back.Close() })
	var gotB, gotA int
	if err := h.P.B.SetAMHandler(12, func(any, []byte, uct.AMFlags) { gotB++ }, nil); err != nil {
		b.Fatal(err)
	}
	if err := h.P.A.SetAMHandler(12, func(any, []byte, uct.AMFlags) { gotA++ }, nil); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 0)
	send := func(ep uct.Endpoint, p uct.Iface) {
		for {
			err := ep.AMShort(12, 8, payload)
			if err == nil {
				return
			}
			if !errors.Is(err, uct.ErrNoResource) {
				b.Fatalf("AMShort: %v", err)
			}
			p.Progress()
		}
	}
	wait := func(got *int, i int, first, second uct.Iface) {
		var deadline time.Time
		for spins := 1; *got <= i; spins++ {
			first.Progress()
			second.Progress()
			if spins&0xffff == 0 {
				if deadline.IsZero() {
					deadline = time.Now().Add(Timeout)
				} else if time.Now().After(deadline) {
					b.Fatalf("ping-pong: message %d not received after %v", i, Timeout)
				}
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(h.EP, h.P.A)
		wait(&gotB, i, h.P.B, h.P.A)
		send(back, h.P.B)
		wait(&gotA, i, h.P.A, h.P.B)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "ns/one-way")
}

func benchRate(b *testing.B, f Factory) {
	h := NewHarness(b, f)
	h.NeedCap(uct.CapAMShort, "AM short")
	got := 0
	if err := h.P.B.SetAMHandler(13, func(any, []byte, uct.AMFlags) { got++ }, nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; {
		err := h.EP.AMShort(13, uint64(i), nil)
		switch {
		case err == nil:
			i++
		case errors.Is(err, uct.ErrNoResource):
			h.P.B.Progress()
			h.P.A.Progress()
		default:
			b.Fatalf("AMShort: %v", err)
		}
	}
	h.Until("all messages", func() bool { return got == b.N })
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}

func benchPut(b *testing.B, f Factory) {
	h := NewHarness(b, f)
	h.NeedCap(uct.CapPutZcopy, "put zcopy")
	const size = 1 << 20
	n := min(size, h.AttrA.PutMaxZcopy)
	rm := h.RemoteMemory(n, h.P.MDB.Attr().CanAlloc)
	src := pattern(n, 1)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Must("put", func(c *uct.Completion) error {
			return h.EP.PutZcopy([][]byte{src}, rm.Mem.Address(), rm.RKey, c)
		})
	}
	h.FlushEP()
}
