package verbs

import (
	"fmt"
	"testing"
)

// TestPostBurstBatched: messages up to 64 KiB with an upper layer's
// headers (a ucp eager message of 8 KiB in an rc bounce buffer, 16 and
// 64 KiB uct puts) are batched like smaller ones: PostSend sends
// nothing, the next engine pass sends them all, and the memory they
// came from may be reused once PostSend has returned.
func TestPostBurstBatched(t *testing.T) {
	for _, size := range []int{8<<10 + 64, 16 << 10, 64<<10 + 64} {
		t.Run(fmt.Sprint(size), func(t *testing.T) { testPostBurst(t, size) })
	}
}

func testPostBurst(t *testing.T, size int) {
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096})
	const n = 4
	fill(a.buf[:n*size], 5)
	want := make([]byte, n*size)
	copy(want, a.buf[:n*size])
	before := a.d.Counters()
	for i := 0; i < n; i++ {
		if _, err := a.qp.PostSend(SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled,
			RemoteAddr: b.mr.Addr() + uint64(i*size), RKey: b.mr.RKey(), SG: []SGE{a.mr.SGE(i*size, size)}}); err != nil {
			t.Fatal(err)
		}
		fill(a.buf[i*size:(i+1)*size], uint64(50+i)) // reused at once
	}
	if calls := a.d.Counters().TxCalls - before.TxCalls; calls != 0 {
		t.Fatalf("%d posts of %d bytes made %d send calls before any engine pass, want 0", n, size, calls)
	}
	a.d.Progress()
	// The pass sends the whole batch: usually in one call, in more when a
	// signal (the Go runtime's preemption) cuts a sendmmsg short.
	pkts := uint64(n * ((size + 4095) / 4096))
	if sent := a.d.Counters().TxPackets - before.TxPackets; sent != pkts {
		t.Fatalf("%d posts of %d bytes then one engine pass: %d packets sent, want %d", n, size, sent, pkts)
	}
	for i, wc := range poll(t, a.cq, n, a.d, b.d) {
		checkWC(t, wc, uint64(i), WCSuccess, WCRDMAWrite)
	}
	for i := 0; i < n; i++ {
		sameBytes(t, fmt.Sprintf("message %d", i), b.buf[i*size:(i+1)*size], want[i*size:(i+1)*size])
	}
}
