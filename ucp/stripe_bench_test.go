package ucp

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// railsRateEnv sets the rate (Mbit/s) each veth end is limited to in
// BenchmarkRails' rate-limited runs; default railsRate.
const railsRateEnv = "UCGO_UCP_RAILS_MBIT"

const railsRate = 400

// railsWindow is the operations BenchmarkRails keeps in flight: more than
// BenchmarkTagBandwidth's bwWindow, since each announcement of a
// rendezvous waits behind the data queued on the rate-limited AM rail
// (tc holds up to 50 ms), and 16 MiB in flight do not cover that wait
// plus the transfer at two rails' speed.
const railsWindow = 32

func init() {
	// railsink: the sink role with railsWindow receives posted.
	childRoles["railsink"] = func(nd *node) error {
		buf := make([]byte, bwSize)
		var win [railsWindow]*Request
		for i := range win {
			win[i] = nd.w.TagRecv(buf, mkTag(0, tagBench), exact, nil)
		}
		quit := nd.w.TagRecv(nil, tagQuit, 0xffffffff, nil)
		for i := 0; ; i = (i + 1) % railsWindow {
			r := win[i]
			for !r.Done() && !quit.Done() {
				nd.w.Progress()
			}
			if quit.Done() {
				for _, r := range win {
					r.Cancel()
				}
				return quit.Err()
			}
			if err := r.Err(); err != nil {
				return err
			}
			r.Release()
			win[i] = nd.w.TagRecv(buf, mkTag(0, tagBench), exact, nil)
		}
	}
}

// BenchmarkRails: 1 MiB tag sends (rendezvous), 1 MiB Puts and 1 MiB
// Gets, railsWindow in flight, between two namespaces joined by two
// rails (netns.NewRails), each worker with an rc iface per rail, data
// striped over one rail (MaxRndvRails 1) or two. Unlimited, the CPU
// limits a rail; rate-limited (tc, each veth end to UCGO_UCP_RAILS_MBIT,
// default 400 Mbit/s) the rails stand in for NICs of a fixed speed.
// Besides MB/s it reports this side's rc retransmits, drops, timeouts
// (local ACK timeouts and READ retries) and engine passes run by the
// devices' background goroutines (wdruns: the owner had left a device
// alone for a watchdog interval) per operation, and where this side
// stripes, what the rail gate chose (railgate.go): the share of
// transfers on one rail (single/op) and its switches. On a shared
// machine compare one rail and two in alternating runs (go test -count
// repeats each sub-benchmark back to back), for example:
//
//	go test -c -o /tmp/ucp.test ./ucp && for i in 1 2 3 4 5; do for n in 1 2; do
//	  /tmp/ucp.test -test.run '^$' -test.bench "BenchmarkRails/put/400mbit/rails=$n\$" -test.benchtime 3s
//	done; done
func BenchmarkRails(b *testing.B) {
	for _, op := range []string{"tag", "put", "get"} {
		for _, l := range railsLimits() {
			for _, n := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/rails=%d", op, l.name, n), func(b *testing.B) { benchRails(b, op, l.mbit, n) })
			}
		}
	}
}

// railsLimit is a rate each rail's veth ends are limited to (0: none),
// named as the benchmarks' sub-tests are.
type railsLimit struct {
	mbit int
	name string
}

// railsLimits are the rail benchmarks' limits: none, and railsRate or
// what railsRateEnv says.
func railsLimits() []railsLimit {
	rate := railsRate
	if v, err := strconv.Atoi(os.Getenv(railsRateEnv)); err == nil && v > 0 {
		rate = v
	}
	return []railsLimit{{0, "unlimited"}, {rate, fmt.Sprintf("%dmbit", rate)}}
}

func benchRails(b *testing.B, op string, mbit, rails int) {
	b.Setenv(epTimeoutEnv, "30s")
	r, err := netns.NewRails(b, 2)
	if err != nil {
		b.Fatal(err)
	}
	if mbit > 0 {
		for i := range r.A {
			for _, ns := range []*netns.NS{r.A[i], r.B[i]} {
				if err := ns.SetRate(mbit); err != nil {
					b.Skipf("tc: %v", err)
				}
			}
		}
	}
	role := map[string]string{"tag": "railsink", "put": "rma", "get": "rma"}[op]
	nd := railsWorldOn(b, r, role, Config{MaxRndvRails: rails}, EnvMaxRndvRails+"="+strconv.Itoa(rails))
	if got := len(nd.eps[1].rails); got != map[int]int{1: 0, 2: 2}[rails] {
		b.Fatalf("%d rails striped, want %d", got, rails)
	}
	before, gate := rcCounters(nd.ctx), nd.w.Stats().Rails
	if op == "tag" {
		benchTagBandwidth(b, nd, bwSize, railsWindow)
	} else {
		benchRMABandwidth(b, nd, op == "get", bwSize, railsWindow)
	}
	after := rcCounters(nd.ctx)
	b.ReportMetric(float64(after.Retransmits-before.Retransmits)/float64(b.N), "retx/op")
	b.ReportMetric(float64(after.RxDropped+after.TxDropped-before.RxDropped-before.TxDropped)/float64(b.N), "drops/op")
	b.ReportMetric(float64(after.WatchdogRuns-before.WatchdogRuns)/float64(b.N), "wdruns/op")
	b.ReportMetric(float64(after.Timeouts-before.Timeouts+after.ReadRetries-before.ReadRetries)/float64(b.N), "timeouts/op")
	// the rail gate's choices on this side: the share of the transfers
	// it put on one rail (probes and switches to one rail) and its
	// switches
	if g := nd.w.Stats().Rails; g.Striped+g.Single > gate.Striped+gate.Single {
		b.ReportMetric(float64(g.Single-gate.Single)/float64(g.Striped+g.Single-gate.Striped-gate.Single), "single/op")
		b.ReportMetric(float64(g.Switches-gate.Switches), "switches")
	}
}

// rcCounters sums the packet counters of the context's rc devices.
func rcCounters(c *Context) verbs.Counters {
	var sum verbs.Counters
	for _, m := range c.mds {
		md, ok := m.md.(*rc.MD)
		if !ok {
			continue
		}
		k := md.Device().Counters()
		sum.Retransmits += k.Retransmits
		sum.RxDropped += k.RxDropped
		sum.TxDropped += k.TxDropped
		sum.Timeouts += k.Timeouts
		sum.ReadRetries += k.ReadRetries
		sum.WatchdogRuns += k.WatchdogRuns
		sum.TxCalls += k.TxCalls
		sum.TxPackets += k.TxPackets
		sum.TxDatagrams += k.TxDatagrams
		sum.RxPackets += k.RxPackets
		sum.RxCalls += k.RxCalls
		sum.RxEmpty += k.RxEmpty
	}
	return sum
}

// benchRMABandwidth puts (or gets) size bytes to (from) the rma child's
// registered memory with window operations in flight.
func benchRMABandwidth(b *testing.B, nd *node, get bool, size, window int) {
	defer pinCPU(0)()
	ep, w := nd.eps[1], nd.w
	keys := recvKeys(b, nd, 1)
	reg := keys[0]
	buf := pattern(size, 1)
	win := make([]*Request, window)
	run := func(n int) {
		for i := 0; i < n; i++ {
			k := i % window
			if r := win[k]; r != nil {
				spin(w, r)
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Release()
			}
			if get {
				win[k] = ep.Get(buf, reg.addr, reg.key, nil)
			} else {
				win[k] = ep.Put(buf, reg.addr, reg.key, nil)
			}
		}
		for k, r := range win {
			if r != nil {
				spin(w, r)
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				r.Release()
				win[k] = nil
			}
		}
	}
	run(2 * window)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	benchQuit(nd)
}
