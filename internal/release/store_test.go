package release

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestStore: the word holds what Store wrote, and a goroutine that sees
// a flag stored with Store sees the data written before it.
func TestStore(t *testing.T) {
	var w uint64
	for _, v := range []uint64{1, 1 << 63, ^uint64(0), 0} {
		Store(&w, v)
		if got := atomic.LoadUint64(&w); got != v {
			t.Fatalf("stored %#x, read %#x", v, got)
		}
	}
	const rounds = 1000
	var data, flag, ack uint64
	bad := make(chan [2]uint64, 1)
	go func() {
		defer close(bad)
		for i := uint64(1); i <= rounds; i++ {
			for atomic.LoadUint64(&flag) != i {
				runtime.Gosched()
			}
			if d := atomic.LoadUint64(&data); d != i {
				bad <- [2]uint64{i, d}
				atomic.StoreUint64(&ack, rounds)
				return
			}
			atomic.StoreUint64(&ack, i)
		}
	}()
	for i := uint64(1); i <= rounds && atomic.LoadUint64(&ack) < rounds; i++ {
		atomic.StoreUint64(&data, i)
		Store(&flag, i)
		for a := atomic.LoadUint64(&ack); a != i && a < rounds; a = atomic.LoadUint64(&ack) {
			runtime.Gosched()
		}
	}
	if b, ok := <-bad; ok {
		t.Fatalf("round %d: saw the flag with data %d", b[0], b[1])
	}
}
