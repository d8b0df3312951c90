package uct

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// EventType is the kind of an async event. The set follows ibv_event_type,
// plus the events of transports without verbs (peer process failed).
type EventType int

const (
	EventQPFatal EventType = iota + 1
	EventQPRequestError
	EventQPAccessError
	EventCommEstablished
	EventSQDrained
	EventPathMigrated
	EventPathMigrationError
	EventQPLastWQEReached
	EventCQError
	EventSRQError
	EventSRQLimitReached
	EventPortActive
	EventPortError
	EventLIDChange
	EventPKeyChange
	EventGIDChange
	EventDeviceFatal
	// EventPeerFailed: the process behind an endpoint died.
	EventPeerFailed
	// EventEndpointError: an endpoint entered its error state.
	EventEndpointError
	// EventSMChange and EventClientReregister are InfiniBand's subnet
	// manager events; a RoCE device has no subnet manager and never posts
	// them.
	EventSMChange
	EventClientReregister
	// EventCorruptPacket: packets failed their integrity check (RoCE
	// ICRC) and were dropped; Err counts them. Posted at most once a
	// second per device.
	EventCorruptPacket
)

var eventNames = map[EventType]string{
	EventQPFatal:            "QP fatal",
	EventQPRequestError:     "QP request error",
	EventQPAccessError:      "QP access error",
	EventCommEstablished:    "communication established",
	EventSQDrained:          "SQ drained",
	EventPathMigrated:       "path migrated",
	EventPathMigrationError: "path migration error",
	EventQPLastWQEReached:   "last WQE reached",
	EventCQError:            "CQ error",
	EventSRQError:           "SRQ error",
	EventSRQLimitReached:    "SRQ limit reached",
	EventPortActive:         "port active",
	EventPortError:          "port error",
	EventLIDChange:          "LID change",
	EventPKeyChange:         "PKey change",
	EventGIDChange:          "GID change",
	EventDeviceFatal:        "device fatal",
	EventPeerFailed:         "peer process failed",
	EventEndpointError:      "endpoint error",
	EventSMChange:           "SM change",
	EventClientReregister:   "client re-register",
	EventCorruptPacket:      "corrupt packet",
}

func (t EventType) String() string {
	if s, ok := eventNames[t]; ok {
		return s
	}
	return fmt.Sprintf("event(%d)", int(t))
}

// Event is one async event. It must be acknowledged with Ack exactly once;
// the object it names cannot finish closing until its events are acked.
type Event struct {
	Type EventType
	// Object names the object the event is about ("qp 0x12", "cq 3",
	// "ep pid 1234", "port eth0").
	Object string
	// Owner identifies the object for Close's wait for acks; it is compared
	// with ==. It may be nil.
	Owner any
	// Endpoint is the endpoint concerned, if any.
	Endpoint Endpoint
	// Err is the error the event reports, if any.
	Err error

	q     *EventQueue
	acked bool
}

func (e *Event) String() string {
	s := e.Type.String()
	if e.Object != "" {
		s += " on " + e.Object
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Ack acknowledges the event (ibv_ack_async_event). Extra calls do nothing.
func (e *Event) Ack() {
	if e.q != nil {
		e.q.ack(e)
	}
}

// EventQueue is an async event queue with ibv_get_async_event semantics:
// Get blocks, TryGet polls, each event goes to exactly one caller, and
// every event delivered must be acked. Transports Post into it. The zero
// value is an empty queue ready to use.
type EventQueue struct {
	mu      sync.Mutex
	cond    chan struct{} // closed and replaced when something changes
	events  []*Event
	unacked map[any]int // owner → delivered but not acked
	queued  map[any]int // owner → queued, not delivered
	closed  bool
}

// NewEventQueue returns an empty queue.
func NewEventQueue() *EventQueue {
	return &EventQueue{cond: make(chan struct{}), unacked: map[any]int{}, queued: map[any]int{}}
}

// initLocked makes the zero value usable.
func (q *EventQueue) initLocked() {
	if q.cond == nil {
		q.cond = make(chan struct{})
		q.unacked = map[any]int{}
		q.queued = map[any]int{}
	}
}

func (q *EventQueue) signal() {
	close(q.cond)
	q.cond = make(chan struct{})
}

// Post appends an event. Posting to a closed queue drops the event.
func (q *EventQueue) Post(e *Event) {
	q.mu.Lock()
	q.initLocked()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	e.q = q
	q.events = append(q.events, e)
	q.queued[e.Owner]++
	q.signal()
}

// TryGet returns the next event without blocking, or false.
func (q *EventQueue) TryGet() (*Event, bool) {
	q.mu.Lock()
	q.initLocked()
	defer q.mu.Unlock()
	return q.popLocked()
}

func (q *EventQueue) popLocked() (*Event, bool) {
	if len(q.events) == 0 {
		return nil, false
	}
	e := q.events[0]
	q.events[0] = nil
	q.events = q.events[1:]
	q.queued[e.Owner]--
	if q.queued[e.Owner] == 0 {
		delete(q.queued, e.Owner)
	}
	q.unacked[e.Owner]++
	q.signal()
	return e, true
}

// Get blocks until an event arrives, ctx ends or the queue is closed
// (ErrClosed).
func (q *EventQueue) Get(ctx context.Context) (*Event, error) {
	for {
		q.mu.Lock()
		q.initLocked()
		if e, ok := q.popLocked(); ok {
			q.mu.Unlock()
			return e, nil
		}
		if q.closed {
			q.mu.Unlock()
			return nil, ErrClosed
		}
		c := q.cond
		q.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Len returns the number of events not yet delivered.
func (q *EventQueue) Len() int {
	q.mu.Lock()
	q.initLocked()
	defer q.mu.Unlock()
	return len(q.events)
}

func (q *EventQueue) ack(e *Event) {
	q.mu.Lock()
	q.initLocked()
	defer q.mu.Unlock()
	if e.acked {
		return
	}
	e.acked = true
	q.unacked[e.Owner]--
	if q.unacked[e.Owner] <= 0 {
		delete(q.unacked, e.Owner)
	}
	q.signal()
}

// WaitAcks waits until every event of owner (queued or delivered) has been
// acked, or timeout passes. Queued, never delivered events of owner are
// discarded first: nobody can ack what nobody got. It returns an error
// wrapping ErrTimedOut with the number of missing acks if they did not
// come.
func (q *EventQueue) WaitAcks(owner any, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return q.WaitAcksContext(ctx, owner)
}

// WaitAcksContext is WaitAcks bounded by ctx instead of a timeout. The
// error names the owner by its type only: an owner's printed value may be
// large and is not safe to read while other goroutines change it.
func (q *EventQueue) WaitAcksContext(ctx context.Context, owner any) error {
	q.mu.Lock()
	q.initLocked()
	if q.queued[owner] > 0 {
		kept := q.events[:0]
		for _, e := range q.events {
			if e.Owner != owner {
				kept = append(kept, e)
			}
		}
		for i := len(kept); i < len(q.events); i++ {
			q.events[i] = nil
		}
		q.events = kept
		delete(q.queued, owner)
	}
	for {
		n := q.unacked[owner]
		if n == 0 {
			q.mu.Unlock()
			return nil
		}
		c := q.cond
		q.mu.Unlock()
		select {
		case <-c:
		case <-ctx.Done():
			return fmt.Errorf("%d async events of %T not acked: %w: %w", n, owner, ErrTimedOut, ctx.Err())
		}
		q.mu.Lock()
		q.initLocked()
	}
}

// Close wakes every Get with ErrClosed and drops queued events.
func (q *EventQueue) Close() {
	q.mu.Lock()
	q.initLocked()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	q.events = nil
	q.queued = map[any]int{}
	q.signal()
}

// ErrorHandler receives errors that belong to no operation (VipErrorCallback):
// arg is the value given with the handler, ep the endpoint concerned (nil
// for iface-wide errors). It may run on any goroutine.
type ErrorHandler func(arg any, ep Endpoint, err error)

// DefaultErrorHandler logs the error with log/slog.
func DefaultErrorHandler(arg any, ep Endpoint, err error) {
	peer := ""
	if ep != nil {
		peer = ep.Peer()
	}
	slog.Error("uct async error", "peer", peer, "err", err)
}

// DeviceStatus is a device's state as a watcher sees it: a set of flags
// (NetworkDirect's adapter status). The link is DeviceUp or DeviceDown;
// DeviceRDMADisabled may be set with either.
type DeviceStatus int

const (
	DeviceUp DeviceStatus = 1 << iota
	DeviceDown
	// DeviceRDMADisabled: the device is present but may not be used; new
	// operations fail, pending ones are canceled or flushed, resources
	// are released.
	DeviceRDMADisabled
)

// Has reports whether every flag of f is set in s.
func (s DeviceStatus) Has(f DeviceStatus) bool { return s&f == f }

// Usable reports whether operations may run: link up, RDMA not disabled.
func (s DeviceStatus) Usable() bool { return s.Has(DeviceUp) && !s.Has(DeviceRDMADisabled) }

func (s DeviceStatus) String() string {
	out := ""
	for _, f := range []struct {
		flag DeviceStatus
		name string
	}{{DeviceUp, "up"}, {DeviceDown, "down"}, {DeviceRDMADisabled, "rdma-disabled"}} {
		if s&f.flag != 0 {
			if out != "" {
				out += "|"
			}
			out += f.name
			s &^= f.flag
		}
	}
	if s != 0 || out == "" {
		if out != "" {
			out += "|"
		}
		out += fmt.Sprintf("device-status(%#x)", int(s))
	}
	return out
}

// DeviceStatusEvent is delivered to a device watcher.
type DeviceStatusEvent struct {
	Device string
	Status DeviceStatus
}

// Watch is one registration; Close deregisters it.
type Watch struct {
	once sync.Once
	stop func()
}

// NewWatch returns a Watch whose Close calls stop once. A transport's
// Iface.WatchDevice returns one.
func NewWatch(stop func()) *Watch { return &Watch{stop: stop} }

// Close deregisters the watcher; later status changes are not delivered.
func (w *Watch) Close() error {
	if w != nil {
		w.once.Do(w.stop)
	}
	return nil
}
