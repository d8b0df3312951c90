package match

import "testing"

// BenchmarkPingPongMatch is one message each way of a ping-pong on a
// worker: a receive is posted, then its message arrives (expected path),
// and a message arrives before its receive (unexpected path).
func BenchmarkPingPongMatch(b *testing.B) {
	for _, c := range []struct {
		name string
		mask uint64
	}{{"exact", exact}, {"anysrc", anySrc}} {
		b.Run(c.name, func(b *testing.B) {
			m := newTest(Suspend, 1)
			r := &Recv{Tag: tg(1, 5), Mask: c.mask}
			msg := &Msg{Src: 1, Tag: tg(1, 5)}
			b.ReportAllocs()
			for b.Loop() {
				if m.PostRecv(r) != nil || m.Arrive(msg) != r {
					b.Fatal("expected path did not match")
				}
				if m.Arrive(msg) != nil || m.PostRecv(r) != msg {
					b.Fatal("unexpected path did not match")
				}
			}
		})
	}
}

// BenchmarkDeepQueue matches against 64 posted receives of other tags
// and 64 unexpected messages of other tags.
func BenchmarkDeepQueue(b *testing.B) {
	for _, c := range []struct {
		name string
		mask uint64
	}{{"exact", exact}, {"anysrc", anySrc}} {
		b.Run(c.name, func(b *testing.B) {
			m := newTest(Suspend, 1)
			for i := range 64 {
				m.PostRecv(&Recv{Tag: tg(2, uint32(100+i)), Mask: c.mask})
				m.Arrive(&Msg{Src: 3, Tag: tg(3, uint32(200+i))})
			}
			r := &Recv{Tag: tg(1, 5), Mask: c.mask}
			msg := &Msg{Src: 1, Tag: tg(1, 5)}
			b.ReportAllocs()
			for b.Loop() {
				if m.PostRecv(r) != nil || m.Arrive(msg) != r {
					b.Fatal("expected path did not match")
				}
				if m.Arrive(msg) != nil || m.PostRecv(r) != msg {
					b.Fatal("unexpected path did not match")
				}
			}
		})
	}
}
