package shm

import (
	"context"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func timeoutCtx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // released by the timer
	return ctx
}

// quitChild tells an echoing child to quit and waits for it to exit,
// progressing it meanwhile: echoes of earlier requests still on their way
// must find room in its FIFO, or the child, waiting for that room, would
// never read the quit.
func quitChild(t testing.TB, it uct.Iface, ep uct.Endpoint, c *child) {
	t.Helper()
	sendRetry(t, it, func() error { return ep.AMShort(amQuit, 0, nil) })
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("child: %v", err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("child did not exit 20 s after quit")
		}
		if it.Progress() == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
}
