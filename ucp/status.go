package ucp

import (
	"context"
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// PendingError is an error that Request.Wait and Request.Test return while
// the request is still pending: it is a notice, not the request's status.
// The request completes later with a final status; call Wait again to
// wait for it. Match it with errors.As, or ask any error with Final:
//
//	var pe *ucp.PendingError
//	for err := r.Wait(c); errors.As(err, &pe); err = r.Wait(c) {
//		// a peer failed; ResumeMatching or Purge decide the receive's fate
//	}
type PendingError struct {
	msg string
}

func (e *PendingError) Error() string { return e.msg }

// Final reports false: the request has not completed.
func (e *PendingError) Final() bool { return false }

// ErrProcFailedPending is the PendingError reported to a posted receive
// that could match an endpoint that failed while matching is suspended
// (ULFM's MPI_ERR_PROC_FAILED_PENDING). The receive stays posted:
// Request.Wait returns it once, then waits on. ResumeMatching or Purge
// decide what happens next.
var ErrProcFailedPending error = &PendingError{msg: "ucp: peer failure pending"}

// Final reports whether err, returned by Request.Wait or Request.Test, is
// the request's final status: false for a PendingError (the request is
// still pending) and for a context's error returned by Wait when the
// context ended first, true otherwise (nil included).
func Final(err error) bool {
	var pe *PendingError
	if errors.As(err, &pe) {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ErrPeerFailed is uct.ErrPeerFailed: requests that can only be served by
// a dead peer complete with an error matching it (errors.Is).
const ErrPeerFailed = uct.ErrPeerFailed

// Error is the error of one ucp operation: the operation, the endpoint's
// peer and the cause (which carries a uct.Status, matched with errors.Is).
type Error struct {
	Op   string // "tag_send", "tag_recv", "put", "connect", ...
	Peer string // the endpoint's peer, if any
	Err  error
}

func (e *Error) Error() string {
	s := "ucp " + e.Op
	if e.Peer != "" {
		s += " " + e.Peer
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// TruncatedError says that a message did not fit its receive buffer. It
// matches uct.ErrMessageTruncated.
type TruncatedError struct {
	Length int // the message's length
	Buffer int // the receive buffer's length (bytes written)
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("message of %d bytes truncated to %d: %v", e.Length, e.Buffer, uct.ErrMessageTruncated)
}

// Unwrap returns uct.ErrMessageTruncated.
func (e *TruncatedError) Unwrap() error { return uct.ErrMessageTruncated }

// ErrTruncated is uct.ErrMessageTruncated.
const ErrTruncated = uct.ErrMessageTruncated
