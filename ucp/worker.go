package ucp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

const defaultKeepalive = time.Second

// wiface is one transport iface of a worker.
type wiface struct {
	md     *mdEntry
	it     uct.Iface
	attr   uct.IfaceAttr
	active atomic.Bool // polled on every Progress (lanes.go)
	used   atomic.Bool // carries a lane or delivered an event

	ifaceRail // subnets and ordinal of the iface (laneset.go)
}

type asyncErr struct {
	uep  uct.Endpoint
	err  error
	link *linkEvent // a device status change instead (linkwatch.go)
}

// AMMessage is an active message given to an AMHandler. Header and Data
// are valid only until the handler returns. So is the AMMessage itself of
// an eager message (Rndv false) unless the handler keeps it (Keep): the
// worker reuses it for the next message. A rendezvous message stays
// valid after the handler (for RecvData's callback, Keep and Release).
type AMMessage struct {
	ID     uint16
	Header []byte
	Data   []byte
	// Reply is the endpoint the message came from; the handler may send
	// on it.
	Reply *Endpoint
	// Length is the length of the message's data, also when the data
	// has not arrived yet (Rndv).
	Length int
	// Rndv says the data is still in the sender's buffer (rendezvous):
	// Data is nil and RecvData fetches it (am.go).
	Rndv bool

	amState
}

// AMHandler handles active messages of one id. It runs inside Progress,
// without the worker's lock: it may start operations but must not call
// Progress, Wait or Request.Wait, or block. In a thread-safe worker the
// operations it starts are sent when the transports' progress returns
// (the handler runs inside it, holding the transport lock). For a message larger than one fragment it may keep
// the data (AMMessage.Keep) or receive it into its own buffer
// (AMMessage.RecvData, required to get rendezvous data).
type AMHandler func(m *AMMessage)

// Worker is a progress engine with its own ifaces, endpoints, tag matcher
// and request pool. It is driven by Progress (or Request.Wait) on one
// goroutine, or several if Config.ThreadSafe is set.
type Worker struct {
	ctx    *Context
	cfg    Config
	uuid   uint64
	ifaces []*wiface
	pgroup uct.ProgressGroup // Progress drives the ifaces as one loop
	addr   []byte
	m      *match.Matcher

	// The worker's state by concern (worker_rooms.go); their fields are
	// used through the worker (w.eps, w.slots, ...).
	epTable       // endpoints by id, backlog, error queue, purged statuses
	rndvTable     // rendezvous requests waiting for the peer, by slot
	amAssembly    // AM handlers, fragments being assembled, eager messages
	transportLock // the locks of a thread-safe worker (worker_lock.go)
	asyncErrs     // iface errors reported from other goroutines
	ifacePoll     // which idle ifaces to poll (lanes.go)
	linkWatches   // device status watchers (linkwatch.go)
	kaState       // keepalive timer (keepalive.go)
	foEvents      // failover events (failover.go)
	memTable      // memory for atomics as active messages (atomic_am.go)

	drops dropState  // reassembly accounting, drop handler (drops.go)
	rx    rxInfo     // source of the wireup being handled (lanebind.go)
	regs  *regCache  // rendezvous registrations
	evd   eventDrain // events.go

	flushers []*Request // worker and endpoint flush/close requests

	// The request pool, fields of the worker itself since every operation
	// takes from it (getReq and getUnexp stay small enough to inline).
	reqFree []*Request
	unFree  []*unexp
	doneq   reqList // completed requests with a callback, run by Progress

	// ignoreIfaceErrors makes the worker rely on keepalive alone (tests).
	ignoreIfaceErrors atomic.Bool
	stats             WorkerStats
	chunkStalls       int // chunked transfers that met back-pressure (tests)
	closed            bool
}

// NewWorker creates a worker with one iface per transport of the context.
func (c *Context) NewWorker() (*Worker, error) {
	var rb [8]byte
	rand.Read(rb[:])
	w := &Worker{ctx: c, cfg: c.cfg, uuid: binary.LittleEndian.Uint64(rb[:]) | 1, regs: newRegCache(c.cfg.RcacheMax),
		epTable:       epTable{eps: []*Endpoint{nil}, byUUID: map[uint64]*Endpoint{}, goneErr: map[match.Src]error{}},
		amAssembly:    amAssembly{am: map[uint16]AMHandler{}, amFrags: match.NewQueue()},
		transportLock: transportLock{safe: c.cfg.ThreadSafe}}
	mm := match.Suspend
	if c.cfg.MatchingMode == MatchingNeverSuspend {
		mm = match.NeverSuspend
	}
	w.m = match.New(match.Config{Mode: mm, SourceMask: c.cfg.SourceTagMask})
	a := Address{UUID: w.uuid, Host: c.host}
	var errs error
	for _, md := range c.mds {
		it, err := md.md.OpenIface(uct.IfaceParams{ErrorHandler: w.onIfaceError, Group: &w.pgroup})
		if err != nil {
			errs = multierr.Append(errs, err)
			continue
		}
		wi := &wiface{md: md, it: it, attr: it.Attr()}
		w.railIface(wi)
		w.ifaces = append(w.ifaces, wi)
		a.Ifaces = append(a.Ifaces, IfaceAddress{Transport: md.comp.Name(), Addr: it.Address()})
		w.setHandlers(wi)
	}
	if len(w.ifaces) == 0 {
		return nil, fmt.Errorf("ucp: no iface could be opened: %w", multierr.Append(errs, uct.ErrUnreachable))
	}
	for _, wi := range w.ifaces {
		if len(w.ifaces) == 1 || wi.attr.Cap.Has(uct.CapSharedMemory) {
			wi.active.Store(true) // polling them is cheap
		}
	}
	w.addr = a.Pack()
	w.startEventDrain()
	w.watchLinks()
	var ka, probe time.Duration
	if c.cfg.ErrorMode == ErrorModePeer {
		ka = c.cfg.KeepaliveInterval
	}
	if w.probing() {
		probe = c.cfg.Failover.ProbeInterval
	}
	if ka > 0 || probe > 0 {
		w.kaStop, w.kaDone = make(chan struct{}), make(chan struct{})
		go w.keepaliveTimer(ka, probe)
	}
	return w, nil
}

// Address returns the packed worker address to hand to peers out of band.
func (w *Worker) Address() []byte { return append([]byte(nil), w.addr...) }

// SetAMHandler installs h for active-message id; nil removes it.
func (w *Worker) SetAMHandler(id uint16, h AMHandler) {
	w.lock()
	defer w.unlock()
	if h == nil {
		delete(w.am, id)
		return
	}
	w.am[id] = h
}

// Progress runs the transports' progress, dispatches queued work, handles
// failures and runs completion callbacks, on the caller's goroutine. It
// returns the number of events processed. Called from a callback (or while
// another goroutine progresses a thread-safe worker) it returns 0.
func (w *Worker) Progress() int {
	if w.safe {
		return w.progressSafe()
	}
	if w.inProgress {
		return 0
	}
	w.inProgress = true
	// iface progress runs the AM handlers, which lock the worker themselves
	n := w.progressIfaces()
	if w.asyncN.Load() == 0 && !w.kaDue.Load() && len(w.backlog) == 0 && len(w.flushers) == 0 &&
		w.doneq.empty() && len(w.errq) == 0 && len(w.foq) == 0 {
		w.inProgress = false
		return n
	}
	k, done, errq := w.progressWork()
	w.closeDetached()
	n += k + w.runCallbacks(done, errq)
	w.inProgress = false
	return n
}

// progressSafe is Progress of a thread-safe worker: the transports'
// progress and the work that posts run under the transport lock, the
// callbacks after it is released (so that they may start operations that
// post at once), one Progress at a time.
func (w *Worker) progressSafe() int {
	if !w.progMu.TryLock() {
		return 0
	}
	w.acquireT()
	n := w.progressIfaces()
	w.mu.Lock()
	w.tstate = tHeld
	k, done, errq := w.progressWork()
	w.releaseT()
	n += k + w.runCallbacks(done, errq)
	w.progMu.Unlock()
	return n
}

// progressWork handles async errors, keepalive, the backlog and flushes
// and takes the due callbacks (lock held; in a thread-safe worker with
// the transport lock).
func (w *Worker) progressWork() (int, []*Request, []*Endpoint) {
	n := 0
	if w.asyncN.Load() != 0 {
		n += w.handleAsync()
	}
	if w.kaDue.Load() {
		w.kaDue.Store(false)
		w.timerWork()
	}
	if len(w.backlog) != 0 {
		n += w.drainBacklog()
	}
	if len(w.flushers) != 0 {
		w.checkFlushers()
	}
	w.takeFoEvents()
	done := w.doneq.take()
	errq := w.errq
	w.errq = nil
	return n, done, errq
}

// runCallbacks runs completion callbacks and error handlers (lock not
// held).
func (w *Worker) runCallbacks(done []*Request, errq []*Endpoint) int {
	n := 0
	for _, r := range done {
		n++
		r.cb(r)
		if r.autoRel {
			w.lock()
			w.putReq(r)
			w.unlock()
		}
	}
	for _, ep := range errq {
		n++
		if h := ep.params.ErrorHandler; h != nil {
			h(ep, ep.err)
		}
	}
	return n + w.runFoEvents()
}

// busy reports whether Progress has work that no iface event announces.
func (w *Worker) busy() bool {
	w.lock()
	defer w.unlock()
	return w.busyLocked()
}

func (w *Worker) busyLocked() bool {
	return len(w.backlog) != 0 || len(w.flushers) != 0 || w.asyncN.Load() != 0
}

// Wait arms the ifaces and sleeps until one has an event, a peer failure
// is reported, the keepalive timer fires, or ctx ends. It does not run
// Progress. It returns ctx's error if ctx ended. In a thread-safe worker
// it sleeps holding the transport lock: one goroutine sleeps at a time
// (the others wait for the lock), and an operation or a Progress of
// another goroutine wakes it.
func (w *Worker) Wait(ctx context.Context) error {
	return w.wait(ctx, nil)
}

// wait is Wait; in a thread-safe worker it does not sleep once r (if
// not nil) has completed.
func (w *Worker) wait(ctx context.Context, r *Request) error {
	if w.safe {
		return w.waitSafe(ctx, r)
	}
	if w.busy() {
		return nil
	}
	for _, wi := range w.ifaces {
		if wi.it.Arm() != nil {
			w.pollIdle.Store(true)
			return nil
		}
	}
	if w.asyncN.Load() != 0 {
		return nil
	}
	w.waitIfaces(ctx)
	return ctx.Err()
}

// waitSafe is wait of a thread-safe worker. The decision to sleep is
// taken under the worker's lock, where operations queue work and
// complete requests: a request completed or work queued before it stops
// the sleep, one after it wakes the sleeper (complete, toBacklog).
func (w *Worker) waitSafe(ctx context.Context, r *Request) error {
	w.tmu.Lock()
	armed := true
	for _, wi := range w.ifaces {
		if wi.it.Arm() != nil {
			armed = false
			break
		}
	}
	w.mu.Lock()
	if !armed || r != nil && r.isDone() || w.busyLocked() || len(w.laneClose) != 0 || w.tWant != 0 ||
		w.kaDue.Load() || ctx.Err() != nil {
		if !armed {
			w.pollIdle.Store(true)
		}
		w.releaseT()
		return ctx.Err()
	}
	w.asleep = true
	w.mu.Unlock()
	w.waitIfaces(ctx)
	w.mu.Lock()
	w.asleep = false
	w.releaseT()
	return ctx.Err()
}

// Wake makes a concurrent Wait return.
func (w *Worker) Wake() {
	for _, wi := range w.ifaces {
		wi.it.Wake()
	}
}

// onIfaceError receives transport errors (any goroutine).
func (w *Worker) onIfaceError(_ any, uep uct.Endpoint, err error) {
	if w.ignoreIfaceErrors.Load() || uep == nil {
		if uep == nil {
			slog.Warn("ucp: iface error", "err", err)
		}
		return
	}
	w.amu.Lock()
	w.async = append(w.async, asyncErr{uep: uep, err: err})
	w.asyncN.Add(1)
	w.amu.Unlock()
	w.Wake()
}

func (w *Worker) handleAsync() int {
	w.amu.Lock()
	evs := w.async
	w.async = nil
	w.asyncN.Store(0)
	w.amu.Unlock()
	for _, ev := range evs {
		if ev.link != nil {
			w.onLink(ev.link)
			continue
		}
		for _, ep := range w.live {
			for i := range ep.lanes {
				if ep.lanes[i].ep == ev.uep {
					w.laneFault(ep, i, ev.err)
				}
			}
		}
	}
	return len(evs)
}

// ResumeMatching acknowledges every pending endpoint failure and restarts
// tag matching in the original order: posted receives, oldest first, each
// take their earliest matching unexpected message.
func (w *Worker) ResumeMatching() {
	w.lock()
	defer w.unlock()
	for _, p := range w.m.Resume() {
		w.deliver(p.Recv.Data.(*Request), p.Msg.Data.(*unexp))
	}
}

// MatchingSuspended reports whether tag matching is stopped by a pending
// endpoint failure.
func (w *Worker) MatchingSuspended() bool {
	w.lock()
	defer w.unlock()
	return w.m.Suspended()
}

// Close force-closes every endpoint (their requests complete with
// uct.ErrCanceled), completes posted receives with uct.ErrCanceled, and
// closes the ifaces. Idempotent.
func (w *Worker) Close() error {
	w.lockT()
	if w.closed {
		w.unlock()
		return nil
	}
	w.closed = true
	for _, ep := range append([]*Endpoint(nil), w.live...) {
		w.closeEP(ep, true, uct.ErrCanceled)
	}
	recvs, msgs := w.m.Drain()
	for _, mr := range recvs {
		w.complete(mr.Data.(*Request), opErr("tag_recv", "", uct.ErrCanceled))
	}
	for _, m := range msgs {
		w.freeUnexp(m.Data.(*unexp))
	}
	for _, r := range append([]*Request(nil), w.flushers...) {
		w.complete(r, opErr(kindOp[r.kind], "", uct.ErrCanceled))
	}
	w.flushers = nil
	regErr := w.regs.close()
	w.unlock()
	if w.kaStop != nil {
		close(w.kaStop)
		<-w.kaDone
	}
	w.stopEventDrain()
	w.unwatchLinks()
	err := regErr
	if w.safe {
		w.acquireT()
		defer w.tmu.Unlock()
	}
	for _, wi := range w.ifaces {
		err = multierr.Append(err, wi.it.Close())
	}
	return err
}
