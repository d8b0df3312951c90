package uctkit

import (
	"sync"
	"sync/atomic"

	"github.com/ucgo/ucgo/internal/release"
	"github.com/ucgo/ucgo/uct"
)

// Notifier implements uct.Iface.Notify (VipCQNotify) for a transport. The
// transport calls Completed once per completion (from Progress) and Cancel
// on close. Each completion runs one handler: the oldest waiting one, or,
// if none waits, the next Notify call, in completion order.
type Notifier struct {
	mu       sync.Mutex
	handlers []notifyEntry
	ready    []uct.CompletionInfo // completions seen with no handler waiting, oldest first
	closed   bool
	// full is set (under mu) while no handler waits and the backlog is
	// full, so that Completed, called on every completion, has nothing to
	// do but count and skips the lock. Notify clears it.
	full atomic.Bool
	// lost is written by CompletedN (one caller at a time, see there)
	// with a plain store and read with atomic loads; the empty array
	// gives it atomic.Uint64's 8-byte alignment on 32-bit platforms.
	_    [0]atomic.Uint64
	lost uint64
}

type notifyEntry struct {
	h   uct.NotifyHandler
	arg any
}

// Notify runs h now with the oldest remembered completion, if there is
// one, else queues it for the next completion.
func (n *Notifier) Notify(h uct.NotifyHandler, arg any) error {
	if h == nil {
		return uct.ErrInvalidParam
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return uct.ErrClosed
	}
	if len(n.ready) > 0 {
		n.full.Store(false)
		c := n.ready[0]
		n.ready[0] = uct.CompletionInfo{}
		n.ready = n.ready[1:]
		if len(n.ready) == 0 {
			n.ready = n.ready[:0:0] // let the backing array go
		}
		n.mu.Unlock()
		h(arg, c, nil)
		return nil
	}
	n.handlers = append(n.handlers, notifyEntry{h, arg})
	n.mu.Unlock()
	return nil
}

// Completed reports one completion: the oldest waiting handler runs with
// c, or c is remembered for the next Notify.
func (n *Notifier) Completed(c uct.CompletionInfo) {
	n.CompletedN(1, c)
}

// CompletedN reports count completions alike (a batch of receives).
// Transports call Completed and CompletedN from Progress, never at once,
// so the count of a full backlog is kept without a locked instruction
// (release.Store: not even the implicit one of an atomic store), which
// would make Progress wait for the stores it left buffered.
func (n *Notifier) CompletedN(count int, c uct.CompletionInfo) {
	if n.full.Load() {
		release.Store(&n.lost, atomic.LoadUint64(&n.lost)+uint64(count))
		return
	}
	for ; count > 0; count-- {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return
		}
		if len(n.handlers) == 0 {
			for ; count > 0 && len(n.ready) < uct.NotifyBacklog; count-- {
				n.ready = append(n.ready, c)
			}
			if len(n.ready) == uct.NotifyBacklog {
				n.full.Store(true)
				atomic.AddUint64(&n.lost, uint64(count))
			}
			n.mu.Unlock()
			return
		}
		e := n.handlers[0]
		n.handlers[0] = notifyEntry{}
		n.handlers = n.handlers[1:]
		n.mu.Unlock()
		e.h(e.arg, c, nil)
	}
}

// Forget drops the endpoint from the completions remembered for later
// Notify calls: a transport calls it when ep closes, so that the backlog
// keeps no closed endpoint (and what it holds) alive. Those completions
// stay remembered and name no endpoint.
func (n *Notifier) Forget(ep uct.Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range n.ready {
		if n.ready[i].Endpoint == ep {
			n.ready[i].Endpoint = nil
		}
	}
}

// Waiting returns the number of queued handlers.
func (n *Notifier) Waiting() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.handlers)
}

// Remembered returns the number of completions waiting for a Notify.
func (n *Notifier) Remembered() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ready)
}

// Overflows returns the number of completions dropped because
// uct.NotifyBacklog completions were already waiting for a Notify.
func (n *Notifier) Overflows() uint64 { return atomic.LoadUint64(&n.lost) }

// Cancel runs every queued handler with uct.ErrCanceled, forgets remembered
// completions and refuses new handlers.
func (n *Notifier) Cancel() {
	n.mu.Lock()
	hs := n.handlers
	n.handlers = nil
	n.ready = nil
	n.closed = true
	n.mu.Unlock()
	for _, e := range hs {
		e.h(e.arg, uct.CompletionInfo{}, uct.ErrCanceled)
	}
}
