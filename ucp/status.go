package ucp

import (
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// ErrProcFailedPending is reported (not as a completion) to a posted
// receive that could match an endpoint that failed while matching is
// suspended (ULFM's MPI_ERR_PROC_FAILED_PENDING). The receive stays
// posted: Request.Wait returns it once, then waits on. ResumeMatching or
// Purge decide what happens next.
var ErrProcFailedPending = errors.New("ucp: peer failure pending")

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

func opErr(op, peer string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Peer: peer, Err: err}
}

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
