package ucp

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTagLatencyRCSizes: tag ping-pong of 4 to 64 KiB over rc
// between two network namespaces, failover off. Besides ns/oneway it
// reports what this side's device did per message it sent: datagrams
// (a GSO datagram carries several packets; the ACK of the echo is one
// more), packets, and engine passes its background goroutine ran
// (wdruns, which a ping-pong that polls never needs).
//
//	go test -run XXX -bench BenchmarkTagLatencyRCSizes ./ucp/
func BenchmarkTagLatencyRCSizes(b *testing.B) {
	for _, size := range []int{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			nd := netnsWorld(b, "pong", Config{})
			defer pinCPU(0)()
			ep, w := nd.eps[1], nd.w
			out, in := pattern(size, 1), make([]byte, size)
			for range 1000 {
				tagRoundTrip(b, w, ep, out, in)
			}
			before := rcCounters(nd.ctx)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				tagRoundTrip(b, w, ep, out, in)
			}
			el := time.Since(start)
			b.StopTimer()
			after := rcCounters(nd.ctx)
			n := float64(b.N)
			b.ReportMetric(float64(el.Nanoseconds())/(2*n), "ns/oneway")
			b.ReportMetric(float64(after.TxDatagrams-before.TxDatagrams)/n, "dgrams/msg")
			b.ReportMetric(float64(after.TxPackets-before.TxPackets)/n, "pkts/msg")
			b.ReportMetric(float64(after.WatchdogRuns-before.WatchdogRuns)/n, "wdruns/msg")
			benchQuit(nd)
		})
	}
}
