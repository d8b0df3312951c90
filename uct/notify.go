package uct

import (
	"fmt"
)

// NotifyQueue says which work queue a completion came from (VIA's
// RecvQueue flag of a CQ notification).
type NotifyQueue int

const (
	// NotifySend: an operation posted on an endpoint completed.
	NotifySend NotifyQueue = iota + 1
	// NotifyRecv: a message was received on the iface.
	NotifyRecv
)

func (q NotifyQueue) String() string {
	switch q {
	case NotifySend:
		return "send"
	case NotifyRecv:
		return "recv"
	}
	return fmt.Sprintf("queue(%d)", int(q))
}

// CompletionInfo is what a Notify handler learns about the completion that
// ran it: the queue and, for a send completion, the endpoint the operation
// was posted on. A receive names no endpoint: messages arrive on the iface,
// from peers that need no endpoint of ours; nor does a send whose endpoint
// closed before a Notify took its completion. A canceled handler gets the
// zero value.
type CompletionInfo struct {
	Endpoint Endpoint
	Queue    NotifyQueue
}

// NotifyHandler is run by Notify (VipCQNotify's handler): arg is the value
// given with it, c the completion, err nil or ErrCanceled when the iface
// closed before a completion came.
type NotifyHandler func(arg any, c CompletionInfo, err error)

// NotifyBacklog is how many completions an iface remembers while no
// handler waits. Later ones are counted in Overflows and dropped, like the
// entries of a full completion queue.
const NotifyBacklog = 1024
