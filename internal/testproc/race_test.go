package testproc

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func init() {
	// racy writes one variable from two goroutines, then waits to be
	// killed: its race report is its only sign of trouble.
	Register("racy", func() error {
		var x int
		done := make(chan struct{})
		go func() { x = 1; close(done) }()
		x = 2
		<-done
		fmt.Println("ready", x > 0)
		time.Sleep(time.Hour)
		return nil
	})
}

// errorsTB records the errors reported to it instead of failing.
type errorsTB struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (r *errorsTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestKilledChildRaceFails: a race-enabled child that races and is then
// killed at the test's end fails the test with its race report.
func TestKilledChildRaceFails(t *testing.T) {
	if !raceEnabled {
		t.Skip("needs the race detector (go test -race)")
	}
	rec := &errorsTB{}
	t.Run("child", func(t *testing.T) {
		rec.T = t
		c := Start(rec, Spec{Role: "racy"})
		var ready, ok string
		if err := c.Scan(60*time.Second, &ready, &ok); err != nil || ready != "ready" {
			t.Fatalf("first line %q, %v", ready, err)
		}
	})
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "DATA RACE") || !strings.Contains(rec.errs[0], "racy") {
		t.Fatalf("errors after the racy child: %q, want one with its race report", rec.errs)
	}
}

// TestCleanChildNoRaceReport: a child without a race leaves no report.
func TestCleanChildNoRaceReport(t *testing.T) {
	rec := &errorsTB{}
	t.Run("child", func(t *testing.T) {
		rec.T = t
		c := Start(rec, Spec{Role: "echo"})
		var ready string
		if err := c.Scan(60*time.Second, &ready); err != nil || ready != "ready" {
			t.Fatalf("first line %q, %v", ready, err)
		}
	})
	if len(rec.errs) != 0 {
		t.Fatalf("errors after a clean child: %q", rec.errs)
	}
}

func TestChildGORACE(t *testing.T) {
	if got := childGORACE("", "/d/race"); got != "atexit_sleep_ms=0 log_path=/d/race" {
		t.Fatalf("childGORACE without parent options = %q", got)
	}
	if got := childGORACE("halt_on_error=1", "/d/race"); got != "halt_on_error=1 log_path=/d/race" {
		t.Fatalf("childGORACE with parent options = %q", got)
	}
}
