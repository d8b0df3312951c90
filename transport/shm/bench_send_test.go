package shm

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// threadCPU is the calling thread's user and system CPU time in ns.
func threadCPU() int64 {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkAMShortCPU: the CPU cost of one 8-byte AMShort through the FIFO
// and its delivery, both by this thread (one iface sends into another's
// FIFO, 32 messages, then drains them): the instructions of the send
// path (claim, tail, publish) and of the receive path, without the cache
// line transfers between cores that a two-process run adds. It reports
// thread CPU time, which a loaded host disturbs less than wall time.
func BenchmarkAMShortCPU(b *testing.B) {
	payload := make([]byte, 0)
	sendCPU(b, func(ep *Endpoint, j int) error { return ep.AMShort(amEcho, uint64(j), payload) })
}

// sendCPU sends b.N messages with send through a FIFO between two ifaces
// of this thread, 32 at a time, each batch drained by Progress before
// the next, and reports the thread's CPU time per message.
func sendCPU(b *testing.B, send func(ep *Endpoint, j int) error) {
	rx, _, ep := connectedPair(b)
	got := 0
	rx.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { got++ }, nil)
	const batch = 32
	run := func(n int) {
		for i := 0; i < n; i += batch {
			k := min(batch, n-i)
			for j := 0; j < k; j++ {
				if err := send(ep, j); err != nil {
					b.Fatal(err)
				}
			}
			for want := got + k; got < want; {
				rx.Progress()
			}
		}
	}
	run(1000)
	defer pinSelf(b)()
	b.ResetTimer()
	c0 := threadCPU()
	run(b.N)
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/msg")
}
