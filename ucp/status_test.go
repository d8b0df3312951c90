package ucp

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// Final tells a request's status from a notice or an ended wait.
func TestFinal(t *testing.T) {
	for _, c := range []struct {
		err   error
		final bool
	}{
		{nil, true},
		{opErr("tag_recv", "p", uct.ErrPeerFailed), true},
		{&TruncatedError{Length: 2, Buffer: 1}, true},
		{ErrProcFailedPending, false},
		{fmt.Errorf("wrapped: %w", ErrProcFailedPending), false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
	} {
		if got := Final(c.err); got != c.final {
			t.Errorf("Final(%v) = %v, want %v", c.err, got, c.final)
		}
	}
	var pe *PendingError
	if !errors.As(ErrProcFailedPending, &pe) || pe.Final() {
		t.Fatal("ErrProcFailedPending is not a non-final PendingError")
	}
}
