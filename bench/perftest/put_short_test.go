package main

import (
	"testing"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// put_bw's short-put loop progresses the iface once every 16 puts, as
// ucx_perftest's send_b does, stamps every put, and its puts land in the
// peer's buffer.
func TestPutShortStreamProgressesEvery16(t *testing.T) {
	const size, iters = 8, 20 * sendsPerProgress
	ini, rsp := pairSessions(t, "put_bw", []int{size})
	copy(ini.src, "ABCDEFGH")
	ini.calibrate()
	rec := report.NewRecorder(iters)
	ini.start(rec, size, iters)
	ini.beginWait()
	if err := ini.putShortStream(size, iters); err != nil {
		t.Fatal(err)
	}
	ini.stop()
	// Nothing arrives at the initiator: every progress call is idle.
	if ini.idle != iters/sendsPerProgress {
		t.Errorf("%d progress calls for %d puts, want %d", ini.idle, iters, iters/sendsPerProgress)
	}
	if rec.Len() != iters {
		t.Errorf("%d iterations stamped, want %d", rec.Len(), iters)
	}
	if got := string(loadBytes(rsp.buf[:size])); got != "ABCDEFGH" {
		t.Errorf("the responder's buffer holds %q", got)
	}
}

// loadBytes reads b one byte at a time through loadByte, as the
// perftest loops read what a peer put.
func loadBytes(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[i] = loadByte(b, i)
	}
	return out
}
