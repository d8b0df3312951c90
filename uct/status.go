package uct

import (
	"errors"
	"fmt"
)

// Status is a uct status code. The zero value is OK. Every status other than
// OK is an error value: it can be returned, wrapped with %w and matched with
// errors.Is. Status strings are stable and may be logged or parsed.
type Status int

// Status codes. The first group follows UCX's ucs_status_t; the second names
// the part that broke so that the caller knows what to repair.
const (
	OK Status = iota
	// ErrInProgress: the operation was started; its completion will fire.
	ErrInProgress
	// ErrNoResource: back-pressure; retry later or add a pending request.
	ErrNoResource
	ErrInvalidParam
	ErrNoMemory
	ErrUnsupported
	ErrBusy
	ErrCanceled
	// ErrTimedOut: the endpoint's peer did not answer in time.
	ErrTimedOut
	ErrConnectionReset
	ErrUnreachable
	// ErrMessageTruncated: the receive buffer was too small.
	ErrMessageTruncated
	// ErrLocalProtection: a local buffer or key was not accessible.
	ErrLocalProtection
	// ErrRemoteProtection: the remote key or address was refused.
	ErrRemoteProtection
	// ErrRemoteOperation: the remote side could not complete the operation.
	ErrRemoteOperation
	// ErrRNRRetryExceeded: the receiver was not ready too many times.
	ErrRNRRetryExceeded
	// ErrFlushed: the operation was flushed because its endpoint or queue
	// entered an error state before it ran.
	ErrFlushed
	ErrDataCorrupt
	// ErrOverrun: more operations were posted than the queue holds.
	ErrOverrun
	ErrInvalidAddress
	ErrClosed
	ErrEndpointTimeout

	// ErrLocalNICFailed: the local device failed; operations on it cannot run.
	ErrLocalNICFailed
	// ErrLocalNICReinit: the local device must be re-initialised (iface reopened).
	ErrLocalNICReinit
	// ErrRemoteNICFailed: the peer's device failed.
	ErrRemoteNICFailed
	// ErrRemoteNICReinit: the peer's device is being re-initialised; reconnect later.
	ErrRemoteNICReinit
	// ErrRouteLost: no path to the peer now (link down, address gone); the
	// path may come back, so wait and retry: the endpoint is not failed.
	ErrRouteLost
	// ErrPeerFailed: the peer process died.
	ErrPeerFailed
	// ErrUnknown: an error that carries no status reached uct's contract;
	// it names no broken part, so it is a bug of ucgo or of its caller.
	// New statuses go after it: ucp carries status numbers on the wire.
	ErrUnknown

	numStatus
)

var statusNames = [...]string{
	OK:                  "ok",
	ErrInProgress:       "operation in progress",
	ErrNoResource:       "no resources available",
	ErrInvalidParam:     "invalid parameter",
	ErrNoMemory:         "out of memory",
	ErrUnsupported:      "unsupported operation",
	ErrBusy:             "device is busy",
	ErrCanceled:         "request canceled",
	ErrTimedOut:         "timed out",
	ErrConnectionReset:  "connection reset by remote peer",
	ErrUnreachable:      "destination is unreachable",
	ErrMessageTruncated: "message truncated",
	ErrLocalProtection:  "local protection error",
	ErrRemoteProtection: "remote access error",
	ErrRemoteOperation:  "remote operation error",
	ErrRNRRetryExceeded: "receiver not ready retries exceeded",
	ErrFlushed:          "operation flushed",
	ErrDataCorrupt:      "data corrupt",
	ErrOverrun:          "queue overrun",
	ErrInvalidAddress:   "invalid address",
	ErrClosed:           "object closed",
	ErrEndpointTimeout:  "endpoint timeout",
	ErrLocalNICFailed:   "local NIC failed",
	ErrLocalNICReinit:   "local NIC needs re-init",
	ErrRemoteNICFailed:  "remote NIC failed",
	ErrRemoteNICReinit:  "remote NIC needs re-init",
	ErrRouteLost:        "route to peer lost",
	ErrPeerFailed:       "peer process failed",
	ErrUnknown:          "unknown error",
}

// Error returns the status's stable string.
func (s Status) Error() string {
	if s >= 0 && s < numStatus {
		return statusNames[s]
	}
	return fmt.Sprintf("unknown status %d", int(s))
}

// String is the same as Error.
func (s Status) String() string { return s.Error() }

// Remedy is what a caller should do about a status.
type Remedy int

const (
	// RemedyNone: nothing is wrong (OK, in progress).
	RemedyNone Remedy = iota
	// RemedyFixCall: the call itself was wrong (bad parameter, unsupported,
	// truncated buffer); correct it, the endpoint is healthy.
	RemedyFixCall
	// RemedyRetry: transient; retry the operation later.
	RemedyRetry
	// RemedyReinitLocal: close and reopen the local iface/device.
	RemedyReinitLocal
	// RemedyReconnect: the endpoint is lost; create a new one to the peer.
	RemedyReconnect
	// RemedyEndpointDead: give up on this endpoint; the peer is gone.
	RemedyEndpointDead
	// RemedyIfaceDead: give up on the whole iface.
	RemedyIfaceDead
	// RemedyReportBug: the error names no known failure; it is a bug to
	// report. The endpoint that returned it is treated as failed.
	RemedyReportBug
)

var remedyNames = [...]string{"none", "fix-call", "retry", "reinit-local", "reconnect", "endpoint-dead", "iface-dead", "report-bug"}

func (r Remedy) String() string {
	if r >= 0 && int(r) < len(remedyNames) {
		return remedyNames[r]
	}
	return fmt.Sprintf("remedy(%d)", int(r))
}

// Remedy returns the remedy class of s.
func (s Status) Remedy() Remedy {
	switch s {
	case OK, ErrInProgress:
		return RemedyNone
	case ErrInvalidParam, ErrUnsupported, ErrMessageTruncated, ErrLocalProtection,
		ErrInvalidAddress, ErrOverrun, ErrCanceled:
		return RemedyFixCall
	case ErrNoResource, ErrBusy, ErrNoMemory, ErrRNRRetryExceeded, ErrDataCorrupt, ErrRemoteNICReinit, ErrRouteLost:
		return RemedyRetry
	case ErrLocalNICReinit:
		return RemedyReinitLocal
	case ErrTimedOut, ErrEndpointTimeout, ErrConnectionReset, ErrUnreachable,
		ErrFlushed, ErrRemoteProtection, ErrRemoteOperation:
		return RemedyReconnect
	case ErrRemoteNICFailed, ErrPeerFailed, ErrClosed:
		return RemedyEndpointDead
	case ErrLocalNICFailed:
		return RemedyIfaceDead
	case ErrUnknown:
		return RemedyReportBug
	}
	return RemedyReportBug
}

// IsEndpointFatal reports whether s leaves the endpoint that produced it
// unusable (it must be closed; a new one may be created).
func (s Status) IsEndpointFatal() bool {
	switch s.Remedy() {
	case RemedyReconnect, RemedyEndpointDead, RemedyIfaceDead, RemedyReinitLocal, RemedyReportBug:
		return true
	}
	return false
}

// StatusOf returns the Status carried by err: OK for nil, the status found
// with errors.As, ErrUnsupported for errors.ErrUnsupported, and ErrUnknown
// for any other error: an error without a status names no broken part, so
// it is reported as a bug rather than disguised as a path failure.
func StatusOf(err error) Status {
	if err == nil {
		return OK
	}
	var s Status
	if errors.As(err, &s) {
		return s
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return ErrUnsupported
	}
	return ErrUnknown
}

// RemedyOf returns the remedy class of err (RemedyNone for nil).
func RemedyOf(err error) Remedy { return StatusOf(err).Remedy() }

// OpError is an error of one operation: it names the operation, the
// endpoint (peer) and the transport, and wraps the status and an optional
// cause. It is to uct what net.OpError is to net.
type OpError struct {
	Op        string // "am_short", "put_zcopy", "connect", ...
	Transport string // "shm", "rc"
	Endpoint  string // printable peer of the endpoint, if any
	Status    Status
	Err       error // underlying cause (syscall error, ...); may be nil
}

func (e *OpError) Error() string {
	s := e.Transport
	if s != "" {
		s += " "
	}
	s += e.Op
	if e.Endpoint != "" {
		s += " " + e.Endpoint
	}
	s += ": " + e.Status.Error()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the status and the cause, so errors.Is matches both.
func (e *OpError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Status, e.Err}
	}
	return []error{e.Status}
}

// NewOpError builds an *OpError. If cause already carries a status and st is
// OK, that status is used.
func NewOpError(transport, op, ep string, st Status, cause error) *OpError {
	if st == OK {
		st = StatusOf(cause)
	}
	return &OpError{Op: op, Transport: transport, Endpoint: ep, Status: st, Err: cause}
}
