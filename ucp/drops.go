package ucp

import "sync/atomic"

// DropReason says why the worker dropped what a peer sent.
type DropReason int

const (
	// DropReassemblyLimit: an active message in fragments announced, or
	// grew to, more than the reassembly limits allow
	// (Config.AMReassemblyMax, AMReassemblyPeerMax). The message is
	// lost; the endpoint and its other messages go on.
	DropReassemblyLimit DropReason = iota + 1
	// DropLaneMismatch: a message named an endpoint other than the one
	// whose connection delivered it (a forged or stray endpoint id,
	// including a close naming another peer). It is not delivered.
	DropLaneMismatch
)

func (r DropReason) String() string {
	switch r {
	case DropReassemblyLimit:
		return "reassembly limit"
	case DropLaneMismatch:
		return "lane mismatch"
	}
	return "unknown"
}

// DropEvent reports a message the worker dropped because of what its
// sender did. Endpoint is the endpoint the message claimed to come from
// (nil if none); Length is the announced length of a reassembly.
type DropEvent struct {
	Reason   DropReason
	Endpoint *Endpoint
	Length   uint64
	Err      error
}

// dropState is the worker's reassembly accounting and drop handler.
type dropState struct {
	asmBytes int // assembly memory held, all peers (reassembly.go)
	// pending are events queued inside a handler, reported when it
	// returns (lanebind.go).
	pending []DropEvent
	handler atomic.Pointer[func(DropEvent)]
}

// SetDropHandler installs h, which is told of every message the worker
// drops because its sender exceeded a limit or named an endpoint that
// is not its own (the counts are in Stats). h runs inside Progress,
// without the worker's lock, like an AMHandler; nil removes it.
func (w *Worker) SetDropHandler(h func(DropEvent)) {
	if h == nil {
		w.drops.handler.Store(nil)
		return
	}
	w.drops.handler.Store(&h)
}

// dropEvent calls the drop handler, if any (without the lock).
func (w *Worker) dropEvent(e DropEvent) {
	if h := w.drops.handler.Load(); h != nil {
		(*h)(e)
	}
}
