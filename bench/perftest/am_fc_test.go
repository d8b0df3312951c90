package main

import (
	"testing"
	"time"
)

// pairSessions opens both sides of test over shm in this process and
// connects them.
func pairSessions(t *testing.T, test string, sizes []int) (ini, rsp *session) {
	t.Helper()
	cfg := &config{Test: test, Transport: "shm", Sizes: sizes, Iters: 10, Window: 16, ErrMode: "none", Wait: "poll", CPU: -1}
	td, err := checkRunnable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ini, err = newSession(cfg, td, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ini.Close() })
	if rsp, err = newSession(cfg, td, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rsp.Close() })
	if err := ini.connect(rsp.setup()); err != nil {
		t.Fatal(err)
	}
	if err := rsp.connect(ini.setup()); err != nil {
		t.Fatal(err)
	}
	return ini, rsp
}

// am_bw runs ucx_perftest's flow control: the receiver acknowledges every
// half window, the sender never has more than a window unacknowledged,
// and a receiver that starts late makes the sender wait for its window,
// never fill the receiver's FIFO. Two phases run back to back, as the
// warm-up and the measured phase do.
func TestAMBWFlowControl(t *testing.T) {
	for _, size := range []int{8, 256, 4096} {
		ini, rsp := pairSessions(t, "am_bw", []int{size})
		const iters = 3000
		for phase := 0; phase < 2; phase++ {
			done := make(chan error, 1)
			go func() {
				// the receiver starts well after the sender
				time.Sleep(50 * time.Millisecond)
				done <- amBW(rsp, size, iters)
			}()
			if err := amBW(ini, size, iters); err != nil {
				t.Fatalf("size %d phase %d: sender: %v", size, phase, err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("size %d phase %d: receiver: %v", size, phase, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("size %d phase %d: the receiver did not finish", size, phase)
			}
			fc := ini.fc
			if fc.noResource != 0 {
				t.Errorf("size %d phase %d: the sender found the receiver's FIFO full %d times", size, phase, fc.noResource)
			}
			if fc.maxUnacked > fcWindow {
				t.Errorf("size %d phase %d: %d messages unacknowledged, window %d", size, phase, fc.maxUnacked, fcWindow)
			}
			if fc.acked != iters || rsp.fc.ackSent != iters {
				t.Errorf("size %d phase %d: last acknowledgement sent %d, received %d, want %d", size, phase, rsp.fc.ackSent, fc.acked, iters)
			}
			// one acknowledgement per half window at most (and the last),
			// and at least one per window
			if lo, hi := iters/fcWindow, iters/(fcWindow/2+1)+1; fc.acks < lo || fc.acks > hi {
				t.Errorf("size %d phase %d: %d acknowledgements, want %d to %d", size, phase, fc.acks, lo, hi)
			}
		}
	}
}
