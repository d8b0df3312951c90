package fd

import (
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func pipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

func isOpen(n int) bool {
	_, err := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
	return err == nil
}

// TestConcurrentCloseClosesOnce: many goroutines close one FD; the
// descriptor is closed once, and a later Close does not close the file
// that the kernel gave the same number to.
func TestConcurrentCloseClosesOnce(t *testing.T) {
	for round := 0; round < 50; round++ {
		r, w := pipe(t)
		f := New(r)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for g := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[g] = f.Close()
			}()
		}
		wg.Wait()
		for g, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Close %d: %v", round, g, err)
			}
		}
		if isOpen(r) {
			t.Fatalf("round %d: descriptor %d still open after Close", round, r)
		}
		// The next descriptor takes the lowest free number: r.
		r2, w2 := pipe(t)
		if err := f.Close(); err != nil {
			t.Fatalf("round %d: Close after Close: %v", round, err)
		}
		if !isOpen(r2) || !isOpen(w2) {
			t.Fatalf("round %d: a second Close closed a reused descriptor (%d)", round, r2)
		}
		if f.Int() != -1 {
			t.Fatalf("round %d: Int after Close = %d, want -1", round, f.Int())
		}
		if err := f.Do(func(int) error { t.Error("Do ran after Close"); return nil }); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: Do after Close = %v, want ErrClosed", round, err)
		}
		unix.Close(w)
		unix.Close(r2)
		unix.Close(w2)
	}
}

// TestCloseWaitsForDo: Close does not close the descriptor while a Do is
// using it.
func TestCloseWaitsForDo(t *testing.T) {
	r, w := pipe(t)
	defer unix.Close(w)
	f := New(r)
	inDo := make(chan struct{})
	release := make(chan struct{})
	doErr := make(chan error, 1)
	go func() {
		doErr <- f.Do(func(n int) error {
			close(inDo)
			<-release
			if !isOpen(n) {
				return errors.New("descriptor closed under Do")
			}
			return nil
		})
	}()
	<-inDo
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while Do was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-doErr; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if isOpen(r) {
		t.Fatal("descriptor open after Close")
	}
}

func TestNilAndNegative(t *testing.T) {
	var nf *FD
	if nf.Int() != -1 || nf.Close() != nil || !errors.Is(nf.Do(func(int) error { return nil }), ErrClosed) {
		t.Error("nil FD does not hold none")
	}
	f := New(-1)
	if f.Int() != -1 || f.Close() != nil || !errors.Is(f.Do(func(int) error { return nil }), ErrClosed) {
		t.Error("New(-1) does not hold none")
	}
}

func TestListAndLeaked(t *testing.T) {
	before, err := List()
	if err != nil {
		t.Fatal(err)
	}
	r, w := pipe(t)
	after, err := List()
	if err != nil {
		t.Fatal(err)
	}
	got := Leaked(before, after)
	if len(got) != 2 || got[0] != min(r, w) || got[1] != max(r, w) {
		t.Errorf("Leaked = %v (%v), want the pipe %d %d", got, Describe(got), r, w)
	}
	unix.Close(r)
	unix.Close(w)
	after, _ = List()
	if got := Leaked(before, after); len(got) != 0 {
		t.Errorf("Leaked after closing the pipe = %v", Describe(got))
	}
}
