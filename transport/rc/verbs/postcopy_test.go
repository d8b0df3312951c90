package verbs

import (
	"fmt"
	"testing"
)

// TestPostBurst8KiBWithHeaders: messages of 8 KiB with an upper layer's
// headers (an rc bounce buffer holds 8 KiB and 64 bytes: a ucp eager
// message of 8 KiB) are batched like smaller ones: PostSend sends
// nothing, the next engine pass sends them all in one call, and the
// memory they came from may be reused once PostSend has returned.
func TestPostBurst8KiBWithHeaders(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true, mtu: MTU4096})
	const n, size = 4, 8<<10 + 64
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
	if calls := a.d.Counters().TxCalls - before.TxCalls; calls != 1 {
		t.Fatalf("%d posts of %d bytes then one engine pass: %d send calls, want 1", n, size, calls)
	}
	for i, wc := range poll(t, a.cq, n, a.d, b.d) {
		checkWC(t, wc, uint64(i), WCSuccess, WCRDMAWrite)
	}
	for i := 0; i < n; i++ {
		sameBytes(t, fmt.Sprintf("message %d", i), b.buf[i*size:(i+1)*size], want[i*size:(i+1)*size])
	}
}
