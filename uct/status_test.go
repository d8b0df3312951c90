package uct

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestStatusStringsStableAndUnique(t *testing.T) {
	// A few strings are pinned: logs and parsers depend on them.
	pinned := map[Status]string{
		OK:                 "ok",
		ErrNoResource:      "no resources available",
		ErrCanceled:        "request canceled",
		ErrPeerFailed:      "peer process failed",
		ErrLocalNICFailed:  "local NIC failed",
		ErrRemoteNICReinit: "remote NIC needs re-init",
		ErrRouteLost:       "route to peer lost",
		ErrEndpointTimeout: "endpoint timeout",
	}
	for s, want := range pinned {
		if got := s.Error(); got != want {
			t.Errorf("Status(%d).Error() = %q, want %q", int(s), got, want)
		}
	}
	seen := map[string]Status{}
	for s := OK; s < numStatus; s++ {
		str := s.Error()
		if str == "" || strings.HasPrefix(str, "unknown status") {
			t.Errorf("Status(%d) has no name", int(s))
		}
		if prev, dup := seen[str]; dup {
			t.Errorf("Status(%d) and Status(%d) share the string %q", int(prev), int(s), str)
		}
		seen[str] = s
		if s.String() != str {
			t.Errorf("Status(%d): String %q != Error %q", int(s), s.String(), str)
		}
	}
	if got := Status(-1).Error(); got != "unknown status -1" {
		t.Errorf("Status(-1) = %q", got)
	}
	if got := numStatus.Error(); !strings.HasPrefix(got, "unknown status") {
		t.Errorf("numStatus = %q", got)
	}
}

func TestRemedyClasses(t *testing.T) {
	cases := map[Status]Remedy{
		OK:                  RemedyNone,
		ErrInProgress:       RemedyNone,
		ErrNoResource:       RemedyRetry,
		ErrBusy:             RemedyRetry,
		ErrInvalidParam:     RemedyFixCall,
		ErrMessageTruncated: RemedyFixCall,
		ErrUnsupported:      RemedyFixCall,
		ErrLocalNICReinit:   RemedyReinitLocal,
		ErrTimedOut:         RemedyReconnect,
		ErrEndpointTimeout:  RemedyReconnect,
		ErrRouteLost:        RemedyRetry,
		ErrRemoteProtection: RemedyReconnect,
		ErrRemoteNICReinit:  RemedyRetry,
		ErrPeerFailed:       RemedyEndpointDead,
		ErrRemoteNICFailed:  RemedyEndpointDead,
		ErrLocalNICFailed:   RemedyIfaceDead,
		ErrUnknown:          RemedyReportBug,
	}
	for s, want := range cases {
		if got := s.Remedy(); got != want {
			t.Errorf("%q.Remedy() = %v, want %v", s, got, want)
		}
	}
	for s := OK; s < numStatus; s++ {
		r := s.Remedy()
		if r < RemedyNone || r > RemedyReportBug {
			t.Errorf("%q has remedy %d out of range", s, int(r))
		}
		if (s == OK || s == ErrInProgress) != (r == RemedyNone) {
			t.Errorf("%q: remedy %v; only OK and in-progress need none", s, r)
		}
		fatal := r == RemedyReconnect || r == RemedyEndpointDead || r == RemedyIfaceDead || r == RemedyReinitLocal || r == RemedyReportBug
		if s.IsEndpointFatal() != fatal {
			t.Errorf("%q: IsEndpointFatal %v, remedy %v", s, s.IsEndpointFatal(), r)
		}
	}
	if ErrNoResource.IsEndpointFatal() || !ErrPeerFailed.IsEndpointFatal() {
		t.Error("back-pressure must not be fatal; peer failure must be")
	}
	names := map[string]bool{}
	for r := RemedyNone; r <= RemedyReportBug; r++ {
		if names[r.String()] {
			t.Errorf("duplicate remedy name %q", r)
		}
		names[r.String()] = true
	}
	if Remedy(99).String() != "remedy(99)" {
		t.Errorf("Remedy(99) = %q", Remedy(99).String())
	}
}

func TestOpErrorMatching(t *testing.T) {
	cause := syscall.ESRCH
	op := NewOpError("shm", "put_zcopy", "pid 42", ErrPeerFailed, cause)
	wrapped := fmt.Errorf("send to rank 3: %w", op)

	if !errors.Is(wrapped, ErrPeerFailed) {
		t.Error("errors.Is(wrapped, ErrPeerFailed) = false")
	}
	if !errors.Is(wrapped, syscall.ESRCH) {
		t.Error("errors.Is(wrapped, ESRCH) = false: the cause must match too")
	}
	if errors.Is(wrapped, ErrCanceled) {
		t.Error("errors.Is(wrapped, ErrCanceled) = true")
	}
	var oe *OpError
	if !errors.As(wrapped, &oe) || oe != op {
		t.Fatalf("errors.As(*OpError) = %v", oe)
	}
	var st Status
	if !errors.As(wrapped, &st) || st != ErrPeerFailed {
		t.Errorf("errors.As(Status) = %v", st)
	}
	var errno syscall.Errno
	if !errors.As(wrapped, &errno) || errno != syscall.ESRCH {
		t.Errorf("errors.As(Errno) = %v", errno)
	}
	if got, want := op.Error(), "shm put_zcopy pid 42: peer process failed: no such process"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if StatusOf(wrapped) != ErrPeerFailed || RemedyOf(wrapped) != RemedyEndpointDead {
		t.Errorf("StatusOf = %v, RemedyOf = %v", StatusOf(wrapped), RemedyOf(wrapped))
	}

	// Without transport, endpoint or cause.
	bare := &OpError{Op: "flush", Status: ErrCanceled}
	if got := bare.Error(); got != "flush: request canceled" {
		t.Errorf("bare Error() = %q", got)
	}
	if !errors.Is(bare, ErrCanceled) || len(bare.Unwrap()) != 1 {
		t.Error("bare OpError does not match its status")
	}

	// Status taken from the cause when st is OK.
	inner := NewOpError("rc", "connect", "10.0.0.2", ErrUnreachable, nil)
	outer := NewOpError("rc", "am_short", "10.0.0.2", OK, fmt.Errorf("qp: %w", inner))
	if outer.Status != ErrUnreachable || !errors.Is(outer, ErrUnreachable) {
		t.Errorf("NewOpError with OK status took %v", outer.Status)
	}
	// A cause with no status gives the unknown-error status.
	if NewOpError("rc", "put", "", OK, errors.New("boom")).Status != ErrUnknown {
		t.Error("unknown cause should map to ErrUnknown")
	}
}

func TestStatusOf(t *testing.T) {
	cases := []struct {
		err  error
		want Status
	}{
		{nil, OK},
		{ErrNoResource, ErrNoResource},
		{fmt.Errorf("x: %w", ErrTimedOut), ErrTimedOut},
		{fmt.Errorf("x: %w", errors.ErrUnsupported), ErrUnsupported},
		{fs.ErrNotExist, ErrUnknown},
		{errors.Join(errors.New("a"), ErrRouteLost), ErrRouteLost},
	}
	for _, c := range cases {
		if got := StatusOf(c.err); got != c.want {
			t.Errorf("StatusOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if RemedyOf(nil) != RemedyNone {
		t.Error("RemedyOf(nil) != RemedyNone")
	}
}

// TestStatusOfUnknownIsABug: an error that carries no status is not a path
// failure; its status says so and its remedy is to report a bug, not to
// reconnect. Its number follows every older status, since ucp carries
// status numbers on the wire.
func TestStatusOfUnknownIsABug(t *testing.T) {
	err := fmt.Errorf("decode: %w", errors.New("index out of range"))
	st := StatusOf(err)
	if st != ErrUnknown {
		t.Fatalf("StatusOf(plain error) = %q, want %q", st, ErrUnknown)
	}
	if st.Remedy() != RemedyReportBug || RemedyOf(err) != RemedyReportBug {
		t.Errorf("remedy of an unknown error = %v, want %v", st.Remedy(), RemedyReportBug)
	}
	if st.Remedy() == RemedyReconnect || errors.Is(st, ErrConnectionReset) {
		t.Error("an unknown error must not read as a connection reset")
	}
	if !st.IsEndpointFatal() {
		t.Error("an unknown error leaves the endpoint in an unknown state: it must count as fatal")
	}
	if RemedyReportBug.String() != "report-bug" {
		t.Errorf("RemedyReportBug = %q", RemedyReportBug)
	}
	// Wire-stable numbering: the codes ucp has always sent keep their values.
	if int(ErrPeerFailed) != 27 || int(ErrUnknown) != 28 {
		t.Errorf("status numbers moved: PeerFailed %d, Unknown %d", int(ErrPeerFailed), int(ErrUnknown))
	}
}

func TestCompletion(t *testing.T) {
	var calls int
	var got error
	c := &Completion{Count: 3, Func: func(c *Completion) { calls++; got = c.Status }}
	c.Invoke(nil)
	c.Invoke(ErrCanceled)
	if calls != 0 {
		t.Fatalf("Func ran at count %d", c.Count)
	}
	c.Invoke(ErrTimedOut)
	if calls != 1 {
		t.Fatalf("Func ran %d times at zero", calls)
	}
	if !errors.Is(got, ErrCanceled) {
		t.Errorf("first error must win: got %v", got)
	}

	// All successes: nil status.
	calls = 0
	ok := &Completion{Count: 2, Func: func(c *Completion) { calls++; got = c.Status }}
	ok.Invoke(nil)
	ok.Invoke(nil)
	if calls != 1 || got != nil {
		t.Errorf("all-success completion: %d calls, status %v", calls, got)
	}

	// No Func, nil completion: no panic.
	(&Completion{Count: 1}).Invoke(ErrCanceled)
	var nilc *Completion
	nilc.Invoke(ErrCanceled)
}
