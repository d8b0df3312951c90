package rc

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// TestTargetProtectionErrorHandler: a peer writes with a remote key our
// side refuses. The requester's operation fails; on the target side, where
// no operation of ours reports it, the error reaches the error handler (as
// well as the event queue).
func TestTargetProtectionErrorHandler(t *testing.T) {
	mda, mdb, a, b := openLoopIfaces(t)
	a.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	var (
		mu   sync.Mutex
		errs []error
	)
	b.SetErrorHandler(func(arg any, ep uct.Endpoint, err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}, "target")
	ab, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ab.Close()
	mem, err := mdb.Alloc(4096, uct.AccessLocalWrite) // no remote access
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	rk, err := mda.UnpackRKey(mem.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	var putErr error
	done := false
	c := &uct.Completion{Count: 1, Func: func(c *uct.Completion) { putErr, done = c.Status, true }}
	if err := ab.PutZcopy([][]byte{make([]byte, 64)}, mem.Address(), rk, c); err != uct.ErrInProgress {
		t.Fatalf("put: %v", err)
	}
	n := func() int { mu.Lock(); defer mu.Unlock(); return len(errs) }
	deadline := time.Now().Add(20 * time.Second)
	for !done || n() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("put done %v (%v), target error handler called %d times", done, putErr, n())
		}
		a.Progress()
		b.Progress()
	}
	if !errors.Is(putErr, uct.ErrRemoteProtection) {
		t.Errorf("requester's put: %v, want ErrRemoteProtection", putErr)
	}
	mu.Lock()
	defer mu.Unlock()
	var oe *uct.OpError
	if !errors.As(errs[0], &oe) || oe.Op != "target" || uct.StatusOf(errs[0]) == uct.ErrUnknown {
		t.Errorf("target error handler got %v, want a target OpError with a status", errs[0])
	}
}
