package ucp

import (
	"testing"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// BenchmarkTagCPUFailover measures what failover costs the 8-byte eager
// ping-pong when nothing fails, as BenchmarkTagCPU does (two workers of
// this process over shm, the thread's CPU time), but in one process: a
// pair of workers with failover off and one with it on (same, any) take
// turns in blocks of foBlock round trips, so a load that comes and goes
// on the machine weighs on both alike. on/off is the ratio of their CPU
// times; cpu-ns/roundtrip is the failover pair's. any+standby runs both
// pairs over the default transports, so that the failover pair's
// endpoints have an rc lane standing by beside shm, as two processes of
// one host have (it is skipped where rc is not usable).
func BenchmarkTagCPUFailover(b *testing.B) {
	for _, c := range []struct {
		name    string
		mode    failover.Mode
		standby bool
	}{{"same", failover.SameTransport, false}, {"any", failover.AnyTransport, false}, {"any+standby", failover.AnyTransport, true}} {
		b.Run(c.name, func(b *testing.B) {
			var ts []uct.Component
			if !c.standby {
				ts = []uct.Component{shm.New()}
			} else if !rcUsable() {
				b.Skip("no netdev for rc: no standby lane")
			}
			off := newPingPong(b, Config{ErrorMode: ErrorModePeer, Transports: ts})
			on := newPingPong(b, Config{ErrorMode: ErrorModePeer, Failover: failover.Policy{Mode: c.mode}, Transports: ts})
			if c.standby && len(on.eps[0].lanes) < 2 {
				b.Fatalf("%d lanes, want shm and an rc lane standing by", len(on.eps[0].lanes))
			}
			defer pinCPU(0)()
			for i := 0; i < 1000; i++ {
				off.round()
				on.round()
			}
			b.ReportAllocs()
			b.ResetTimer()
			var tOff, tOn int64
			for done := 0; done < b.N; {
				n := min(foBlock, b.N-done)
				c0 := threadCPU()
				for i := 0; i < n; i++ {
					off.round()
				}
				c1 := threadCPU()
				for i := 0; i < n; i++ {
					on.round()
				}
				tOn += threadCPU() - c1
				tOff += c1 - c0
				done += n
			}
			b.ReportMetric(float64(tOn)/float64(b.N), "cpu-ns/roundtrip")
			b.ReportMetric(float64(tOff)/float64(b.N), "off-cpu-ns/roundtrip")
			b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
		})
	}
}

// foBlock is how many round trips each pair of BenchmarkTagCPUFailover
// runs in its turn.
const foBlock = 2000

// pingPong is a pair of workers of this process exchanging 8-byte tag
// messages (over cfg.Transports).
type pingPong struct {
	tb      testing.TB
	ws      [2]*Worker
	eps     [2]*Endpoint
	in, out []byte
}

func newPingPong(tb testing.TB, cfg Config) *pingPong {
	ws, ep0 := workerPair(tb, cfg)
	p := &pingPong{tb: tb, ws: ws, in: make([]byte, 8), out: make([]byte, 8)}
	p.eps[0] = ep0
	p.eps[1] = p.oneway(0) // the first message also connects back
	return p
}

// oneway sends one message from worker i to the other and returns the
// receiver's endpoint to the sender.
func (p *pingPong) oneway(i int) *Endpoint {
	from, to := p.ws[i], p.ws[1-i]
	r := to.TagRecv(p.in, 5, exact, nil)
	s := p.eps[i].TagSend(p.out, 5, nil)
	for !r.Done() || !s.Done() {
		from.Progress()
		to.Progress()
	}
	if r.Err() != nil || s.Err() != nil {
		p.tb.Fatal(r.Err(), s.Err())
	}
	sender := r.Info().Sender
	r.Release()
	s.Release()
	return sender
}

func (p *pingPong) round() {
	p.oneway(0)
	p.oneway(1)
}
