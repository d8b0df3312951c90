package uct

import (
	"context"
	"math"
	"time"
)

// Component is a transport: it opens memory domains. Transports are passed
// to ucp explicitly; uct keeps no registry.
type Component interface {
	// Name is the transport's name ("shm", "rc").
	Name() string
	// Devices lists the devices the component can use here.
	Devices() ([]DeviceInfo, error)
	// OpenMD opens a memory domain.
	OpenMD(params MDParams) (MD, error)
}

// DeviceInfo describes one device of a component.
type DeviceInfo struct {
	Name string // "memory" for shm, a netdev name for rc
	Kind string // "shm", "net"
}

// MDParams configures a memory domain.
type MDParams struct{}

// Access is a set of memory access rights.
type Access uint32

const (
	AccessLocalWrite Access = 1 << iota
	AccessRemoteRead
	AccessRemoteWrite
	AccessRemoteAtomic
	AccessAll = AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic
)

// MDAttr describes a memory domain.
type MDAttr struct {
	Component   string
	CanRegister bool // Register works on ordinary Go memory
	CanAlloc    bool // Alloc returns memory shared with peers
	RKeySize    int  // size of a packed remote key
	MaxAlloc    int
	MaxReg      int
}

// MaxRegion is the largest region this module's memory domains register
// or allocate: 1 TiB, or the largest int where int has 32 bits.
const MaxRegion = min(1<<40, math.MaxInt)

// MD is a memory domain: it registers memory, allocates shareable memory and
// unpacks remote keys. It also opens ifaces on its devices.
type MD interface {
	Attr() MDAttr
	// Register makes buf accessible with access rights. Every transport
	// keeps registered memory alive until deregistration: the MD holds a
	// reference to buf until the Mem is closed, so a peer that still has
	// the key never writes into memory the garbage collector has freed,
	// even if the caller dropped every other reference to buf. After Close
	// peers' operations with the key fail with ErrRemoteProtection.
	Register(buf []byte, access Access) (Mem, error)
	// Alloc allocates size bytes that peers can access directly.
	Alloc(size int, access Access) (Mem, error)
	// UnpackRKey turns a peer's packed key into a key usable by endpoints
	// of this MD's ifaces. Bad input gives an error wrapping ErrInvalidParam.
	UnpackRKey(packed []byte) (RKey, error)
	// OpenIface opens an iface on a device of this MD.
	OpenIface(params IfaceParams) (Iface, error)
	Close() error
}

// Mem is registered or allocated memory.
type Mem interface {
	Bytes() []byte
	// Address is the remote address peers use for this memory's first byte.
	Address() uint64
	// PackRKey returns the remote key to send to peers.
	PackRKey() []byte
	// Close deregisters or frees; idempotent.
	Close() error
}

// RKey is an unpacked remote key. Transports define its concrete type.
type RKey interface {
	Close() error
}

// IfaceParams configures an iface.
type IfaceParams struct {
	// Device is the device name; "" picks the component's default.
	Device string
	// ErrorHandler receives async errors of the iface and its endpoints
	// (VipErrorCallback). Nil installs the default handler, which logs.
	ErrorHandler ErrorHandler
	// ErrorArg is passed to ErrorHandler unchanged.
	ErrorArg any
	// RxQueueLen, TxQueueLen size the queues; 0 picks a default.
	RxQueueLen int
	TxQueueLen int
	// Options are transport-specific settings (key=value).
	Options map[string]string
	// Group, if not nil, is the progress loop that drives the iface
	// along with others (see ProgressGroup).
	Group *ProgressGroup
}

// Cap is a capability flag of an iface.
type Cap uint64

const (
	CapAMShort Cap = 1 << iota
	CapAMBcopy
	CapAMZcopy
	CapPutShort
	CapPutBcopy
	CapPutZcopy
	CapGetBcopy
	CapGetZcopy
	CapAtomic32
	CapAtomic64
	CapPending
	CapConnectToIface
	CapErrHandlePeerFailure
	CapEventSendComp
	CapEventRecv
	CapCheckLiveness
	// CapSharedMemory: memory from MD.Alloc may be accessed directly.
	CapSharedMemory
)

// Has reports whether all of want are set.
func (c Cap) Has(want Cap) bool { return c&want == want }

// IfaceAttr describes an iface's limits and costs.
type IfaceAttr struct {
	Transport string
	Device    string
	Cap       Cap

	AMMaxShort  int // payload bytes after the 8-byte header
	AMMaxBcopy  int // header + payload
	AMMaxZcopy  int
	AMMaxHeader int // zcopy header
	AMMaxIOV    int
	// AMZcopyMin: the smallest message (header + payload) for which
	// AMZcopy costs less than AMBcopy, the transport's estimate; 0: no
	// estimate (ucp then uses its own ZcopyThresh).
	AMZcopyMin int
	// AMBcopyAlign, when above zero: an AMBcopy message (header +
	// payload) of k*AMBcopyAlign - AMBcopyAlignLess bytes (k ≥ 1) leaves
	// in packets of one size only (whole path MTUs; AMBcopyAlignLess is
	// what the transport sends besides the message), so consecutive
	// messages of such lengths travel together (on rc: in one GSO
	// datagram). A protocol that cuts a long message into fragments
	// gives every fragment but the last such a length.
	AMBcopyAlign     int
	AMBcopyAlignLess int

	PutMaxShort int
	PutMaxBcopy int
	PutMaxZcopy int
	GetMaxBcopy int
	GetMaxZcopy int

	AddressLen int

	Latency   time.Duration // one-way estimate
	Bandwidth float64       // bytes per second estimate
	Overhead  time.Duration // per-message CPU cost estimate
	Priority  int
}

// AMFlags tell an AM handler about the data it is given.
type AMFlags uint32

// AMHandler receives an active message. data is the AM's header and payload
// as one slice (8-byte header then payload for AMShort); it is valid only
// until the handler returns. Handlers run inside Progress.
type AMHandler func(arg any, data []byte, flags AMFlags)

// Completion is uct_completion_t: Count operations report into it; the
// first error wins; Func runs when Count reaches zero. The caller sets Count
// before posting and must not touch the Completion until Func runs.
type Completion struct {
	Func   func(c *Completion)
	Count  int32
	Status error
}

// Invoke reports one operation's result: the first non-nil err is kept, and
// Func runs when the count reaches zero. Transports call it from Progress.
func (c *Completion) Invoke(err error) {
	if c == nil {
		return
	}
	if err != nil && c.Status == nil {
		c.Status = err
	}
	c.Count--
	if c.Count == 0 && c.Func != nil {
		c.Func(c)
	}
}

// PendingRequest is queued on an endpoint when it returned ErrNoResource.
// Dispatch is called from Progress when resources may be available; it
// returns nil when it posted its work (it is then removed), ErrNoResource to
// stay queued, or another error, which removes it (the request owns
// reporting that error).
type PendingRequest interface {
	Dispatch() error
}

// PendingCanceler is implemented by pending requests that can be told they
// will never be dispatched (their device was disabled, their endpoint
// closed). CancelPending is called once, instead of Dispatch.
type PendingCanceler interface {
	CancelPending(err error)
}

// Iface is an open transport interface on one device.
type Iface interface {
	Attr() IfaceAttr
	// Address returns the packed address peers connect to.
	Address() []byte
	// SetAMHandler installs h for AM id (0..MaxAMID); nil removes it.
	SetAMHandler(id uint8, h AMHandler, arg any) error
	// Connect creates an endpoint to the iface at a packed address. Bad or
	// stale addresses give an error wrapping ErrInvalidAddress or
	// ErrUnreachable.
	Connect(addr []byte, params EPParams) (Endpoint, error)
	// Progress runs completions, AM handlers and pending requests on the
	// caller's goroutine; it returns the number of events processed.
	Progress() int
	// Arm prepares the iface to wake a blocked Wait. It returns ErrBusy if
	// events are already waiting (call Progress instead of sleeping).
	Arm() error
	// Wait sleeps until the armed iface has an event, Wake is called, or
	// ctx ends. It does not run Progress.
	Wait(ctx context.Context) error
	// Wake makes a concurrent Wait return; safe from any goroutine.
	Wake()
	// Notify is VipCQNotify: each completion runs one handler, in
	// completion order. If completions are waiting (up to NotifyBacklog are
	// remembered), h runs now with the oldest; otherwise h is queued and
	// runs (in Progress) at the next completion. h learns the queue (send
	// or receive) and, for a send, the endpoint. Close runs queued
	// handlers with ErrCanceled.
	Notify(h NotifyHandler, arg any) error
	// Flush completes when every operation posted on this iface so far has
	// completed remotely. It returns nil if there is nothing outstanding,
	// ErrInProgress if comp will be invoked.
	Flush(comp *Completion) error
	// Fence orders operations posted after it after those before it.
	Fence() error
	// SetErrorHandler replaces the error handler; nil restores the default.
	SetErrorHandler(h ErrorHandler, arg any)
	// Events is the iface's async event queue.
	Events() *EventQueue
	// WatchDevice registers fn for status changes of the iface's device.
	WatchDevice(fn func(DeviceStatusEvent)) (*Watch, error)
	// Close releases the iface: endpoints are closed, outstanding
	// operations complete with ErrCanceled, queued Notify handlers run
	// with ErrCanceled. Idempotent.
	Close() error
}

// EPParams configures an endpoint.
type EPParams struct {
	// Timeout bounds connection and per-operation liveness; 0 uses the
	// transport's default.
	Timeout time.Duration
}

// MaxAMID is the largest active message id.
const MaxAMID = 31

// AtomicOp is an atomic operation.
type AtomicOp int

const (
	AtomicAdd AtomicOp = iota
	AtomicAnd
	AtomicOr
	AtomicXor
	AtomicSwap
	AtomicCSwap
)

// Endpoint is a connection to one peer iface. Operations return nil when
// they are done locally (the buffer may be reused), ErrInProgress when comp
// will be invoked, ErrNoResource for back-pressure, or an error (an
// *OpError) naming the operation and the peer. After an endpoint-fatal
// status every operation fails fast with that status.
type Endpoint interface {
	Iface() Iface
	// Peer is a printable name of the remote side.
	Peer() string

	AMShort(id uint8, header uint64, payload []byte) error
	// AMBcopy copies header and payload into the transport's buffer and
	// sends them as one message; it returns the length sent.
	AMBcopy(id uint8, header, payload []byte) (int, error)
	// AMZcopy sends header followed by iov without copying iov; the buffers
	// must stay untouched until comp is invoked.
	AMZcopy(id uint8, header []byte, iov [][]byte, comp *Completion) error

	PutShort(buf []byte, raddr uint64, rkey RKey) error
	PutBcopy(buf []byte, raddr uint64, rkey RKey) (int, error)
	PutZcopy(iov [][]byte, raddr uint64, rkey RKey, comp *Completion) error
	GetBcopy(dst []byte, raddr uint64, rkey RKey, comp *Completion) error
	GetZcopy(iov [][]byte, raddr uint64, rkey RKey, comp *Completion) error

	// AtomicPost applies op (Add/And/Or/Xor) with value to the 4- or
	// 8-byte (size) word at raddr without returning the old value.
	AtomicPost(op AtomicOp, size int, value uint64, raddr uint64, rkey RKey) error
	// AtomicFetch applies op and stores the old value in *result. For
	// AtomicCSwap, value is swapped in if the word equals compare.
	AtomicFetch(op AtomicOp, size int, value, compare uint64, result *uint64, raddr uint64, rkey RKey, comp *Completion) error

	// Flush completes when every operation posted on this endpoint has
	// completed remotely; cancel=true instead fails them with ErrCanceled.
	Flush(cancel bool, comp *Completion) error
	Fence() error
	// PendingAdd queues r to be dispatched when resources free up. It
	// returns ErrBusy if resources are available now (post instead).
	PendingAdd(r PendingRequest) error
	// PendingPurge removes every queued request, passing each to cb.
	PendingPurge(cb func(PendingRequest))
	// CheckLiveness probes the peer; comp gets nil if alive or the failure.
	CheckLiveness(comp *Completion) error
	// Err is nil while the endpoint is healthy, else its fatal error.
	Err() error
	// Close releases the endpoint without waiting for the peer: operations
	// still outstanding complete with ErrCanceled. Idempotent.
	Close() error
}
