package ucp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
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
}

type asyncErr struct {
	uep uct.Endpoint
	err error
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
	addr   []byte

	eps     []*Endpoint // by id; nil when closed
	live    []*Endpoint // open endpoints
	byUUID  map[uint64]*Endpoint
	m       *match.Matcher
	reqFree []*Request
	unFree  []*unexp
	doneq   reqList
	backlog []*Endpoint
	errq    []*Endpoint // endpoints whose error callback is due

	// rendezvous slots: requests waiting for an ATS/RTR/ATP, by index.
	slots     []*Request
	slotGen   []uint32
	freeSlots []uint32

	am      map[uint16]AMHandler
	amSeq   uint64       // id of our last multi-fragment active message
	amFrags *match.Queue // active messages being assembled, by (source, id)
	amBufs  [][]byte     // assembly buffers no handler kept
	amMsg   *AMMessage   // given to eager handlers (eagerMsg)
	drops   dropState    // reassembly accounting, drop handler (drops.go)
	rx      rxInfo       // source of the wireup being handled (lanebind.go)

	regs *regCache // rendezvous registrations

	flushers []*Request // worker and endpoint flush/close requests

	// laneClose holds the uct endpoints of closed lanes until unlock
	// closes them: closing one runs its outstanding completions, whose
	// handlers lock the worker.
	laneClose []uct.Endpoint

	// A thread-safe worker has three locks (see "Concurrency and
	// ownership" in doc.go): mu guards its state; tmu is the transport
	// lock, held by whoever calls into the ifaces and their endpoints,
	// also while sleeping in Wait; progMu lets one Progress run at a
	// time. Blocking order: progMu, tmu, mu; a holder of mu only
	// TryLocks tmu (canPost).
	safe       bool
	mu         sync.Mutex
	tmu        sync.Mutex
	progMu     sync.Mutex
	inProgress bool
	tstate     uint8 // the transport access of mu's holder (tNone...)
	asleep     bool  // (mu) a Wait sleeps holding tmu
	tWant      int   // (mu) goroutines blocked on tmu that want it soon

	amu    sync.Mutex
	async  []asyncErr
	asyncN atomic.Int32
	evd    eventDrain // events.go

	idleTick uint32      // Progress calls, for polling idle ifaces
	pollIdle atomic.Bool // poll idle ifaces on the next Progress

	kaDue  atomic.Bool
	kaStop chan struct{}
	kaDone chan struct{}

	// ignoreIfaceErrors makes the worker rely on keepalive alone (tests).
	ignoreIfaceErrors atomic.Bool
	stats             WorkerStats
	chunkStalls       int // chunked transfers that met back-pressure (tests)
	// goneErr is the status of the receives that only a purged endpoint,
	// or a failed one that was closed, could match (by matcher source,
	// i.e. endpoint id); entries go when the matcher forgets the source
	// (forgetGoneErr). Without SourceTagMask no receive can only match
	// one endpoint and goneErr stays empty.
	goneErr map[match.Src]error
	closed  bool
}

// NewWorker creates a worker with one iface per transport of the context.
func (c *Context) NewWorker() (*Worker, error) {
	var rb [8]byte
	rand.Read(rb[:])
	w := &Worker{ctx: c, cfg: c.cfg, uuid: binary.LittleEndian.Uint64(rb[:]) | 1, byUUID: map[uint64]*Endpoint{},
		am: map[uint16]AMHandler{}, safe: c.cfg.ThreadSafe, eps: []*Endpoint{nil}, regs: newRegCache(c.cfg.RcacheMax),
		amFrags: match.NewQueue(), goneErr: map[match.Src]error{}}
	mm := match.Suspend
	if c.cfg.MatchingMode == MatchingNeverSuspend {
		mm = match.NeverSuspend
	}
	w.m = match.New(match.Config{Mode: mm, SourceMask: c.cfg.SourceTagMask})
	a := Address{UUID: w.uuid, Host: c.host}
	var errs error
	for _, md := range c.mds {
		it, err := md.md.OpenIface(uct.IfaceParams{ErrorHandler: w.onIfaceError})
		if err != nil {
			errs = multierr.Append(errs, err)
			continue
		}
		wi := &wiface{md: md, it: it, attr: it.Attr()}
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
	if c.cfg.ErrorMode == ErrorModePeer && c.cfg.KeepaliveInterval > 0 {
		w.kaStop, w.kaDone = make(chan struct{}), make(chan struct{})
		go w.keepaliveTimer(c.cfg.KeepaliveInterval)
	}
	return w, nil
}

// Transport access of the goroutine holding a thread-safe worker's
// lock (Worker.tstate).
const (
	tNone = iota // not tried: canPost tries to take tmu
	tMine        // taken by canPost or lockT: unlock releases it
	tHeld        // held around this call by the goroutine (Progress, a uct callback)
	tBusy        // held by another goroutine, or by this one outside this call: work is queued
)

// lock takes the worker's lock (thread-safe worker). Operations call it;
// uct callbacks call lockCB instead.
func (w *Worker) lock() {
	if w.safe {
		w.mu.Lock()
	}
}

// lockCB takes the worker's lock inside a uct callback (AM handler,
// completion), which runs while its goroutine holds the transport lock:
// the callback may post at once.
func (w *Worker) lockCB() {
	if w.safe {
		w.mu.Lock()
		w.tstate = tHeld
	}
}

// unlockCB releases lockCB's lock. Lanes closed meanwhile are closed by
// the holder of the transport lock before it releases it.
func (w *Worker) unlockCB() {
	if !w.safe {
		w.closeDetached()
		return
	}
	w.tstate = tNone
	w.mu.Unlock()
}

// lockT takes the transport lock, then the worker's, for operations that
// must call into the transports at once (Connect, Close). It blocks, so it
// must not run inside a uct callback.
func (w *Worker) lockT() {
	if w.safe {
		w.acquireT()
		w.mu.Lock()
		w.tstate = tMine
	}
}

// canPost reports whether the holder of the worker's lock may call into
// the transports now (always in a single-goroutine worker). A thread-safe
// worker takes the transport lock if it is free; if not, the caller
// queues its work for the lock's holder, which sends it before releasing
// the lock (releaseT).
func (w *Worker) canPost() bool {
	if !w.safe {
		return true
	}
	switch w.tstate {
	case tNone:
		if w.tmu.TryLock() {
			w.tstate = tMine
			return true
		}
		w.tstate = tBusy
		return false
	case tBusy:
		return false
	}
	return true
}

// unlock releases the worker's lock, then closes the uct endpoints of
// lanes closed meanwhile: their outstanding completions run and lock the
// worker again. A thread-safe worker closes them only while it holds the
// transport lock, since a transport's progress and the endpoint's close
// must not run at once; when another goroutine holds it, that goroutine
// closes them before it releases the lock.
func (w *Worker) unlock() {
	if !w.safe {
		w.closeDetached()
		return
	}
	if w.tstate != tMine && (len(w.laneClose) == 0 || !w.tmu.TryLock()) {
		if len(w.laneClose) != 0 && w.asleep {
			w.Wake() // the sleeper closes them
		}
		w.tstate = tNone
		w.mu.Unlock()
		return
	}
	w.releaseT()
}

// releaseT releases the transport lock and the worker's lock of a
// thread-safe worker (both held): it first sends the work queued by
// goroutines that could not take the transport lock and closes detached
// lanes (worker lock released meanwhile), so nothing waits for a lock
// nobody holds. Work that meets back-pressure stays in the backlog for
// Progress.
func (w *Worker) releaseT() {
	for {
		if len(w.backlog) != 0 {
			w.tstate = tHeld
			w.drainBacklog()
		}
		w.tstate = tNone
		if len(w.laneClose) == 0 {
			w.tmu.Unlock()
			w.mu.Unlock()
			return
		}
		eps := w.laneClose
		w.laneClose = nil
		w.mu.Unlock()
		for _, e := range eps {
			e.Close()
		}
		w.mu.Lock()
	}
}

// acquireT takes the transport lock of a thread-safe worker (worker lock
// not held), waking a goroutine that sleeps in Wait holding it.
func (w *Worker) acquireT() {
	if w.tmu.TryLock() {
		return
	}
	w.mu.Lock()
	w.tWant++
	if w.asleep {
		w.Wake()
	}
	w.mu.Unlock()
	w.tmu.Lock()
	w.mu.Lock()
	w.tWant--
	w.mu.Unlock()
}

// closeDetached closes the uct endpoints of closed lanes (single-goroutine
// worker, lock released).
func (w *Worker) closeDetached() {
	for len(w.laneClose) > 0 {
		eps := w.laneClose
		w.laneClose = nil
		for _, e := range eps {
			e.Close()
		}
	}
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
		w.doneq.empty() && len(w.errq) == 0 {
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
		w.keepalive()
	}
	if len(w.backlog) != 0 {
		n += w.drainBacklog()
	}
	if len(w.flushers) != 0 {
		w.checkFlushers()
	}
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
	return n
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
	w.async = append(w.async, asyncErr{uep, err})
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
		for _, ep := range w.live {
			for i := range ep.lanes {
				if ep.lanes[i].ep == ev.uep {
					w.failEP(ep, ev.err)
				}
			}
		}
	}
	return len(evs)
}

func (w *Worker) keepaliveTimer(d time.Duration) {
	defer close(w.kaDone)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-w.kaStop:
			return
		case <-t.C:
			w.kaDue.Store(true)
			w.Wake()
		}
	}
}

// keepalive judges every healthy endpoint's peer, sends it a heartbeat
// and probes its lanes (lock held).
func (w *Worker) keepalive() {
	for _, ep := range w.live {
		if ep.err != nil || w.heartbeat(ep) {
			continue
		}
		for i := range ep.lanes {
			ln := &ep.lanes[i]
			if ln.kaBusy || ln.ep == nil {
				continue
			}
			ln.kaComp.Count = 1
			ln.kaBusy = true
			err := ln.ep.CheckLiveness(&ln.kaComp)
			if err == uct.ErrInProgress {
				continue
			}
			ln.kaBusy = false
			if err != nil && uct.StatusOf(err).IsEndpointFatal() {
				w.failEP(ep, err)
				break
			}
		}
	}
}

// Flush returns a request that completes when every operation started on
// every endpoint of the worker so far has completed.
func (w *Worker) Flush(p *Params) *Request {
	w.lock()
	defer w.unlock()
	r := w.getReq(kFlush, nil, p)
	w.flushers = append(w.flushers, r)
	return r
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

// slotAlloc stores r in the rendezvous table and returns its id
// (generation << 32 | index + 1).
func (w *Worker) slotAlloc(r *Request) uint64 {
	var i uint32
	if n := len(w.freeSlots); n > 0 {
		i = w.freeSlots[n-1]
		w.freeSlots = w.freeSlots[:n-1]
	} else {
		i = uint32(len(w.slots))
		w.slots = append(w.slots, nil)
		w.slotGen = append(w.slotGen, 0)
	}
	w.slotGen[i]++
	w.slots[i] = r
	return uint64(w.slotGen[i])<<32 | uint64(i+1)
}

func (w *Worker) slotGet(id uint64) *Request {
	i := uint32(id) - 1
	if uint32(id) == 0 || int(i) >= len(w.slots) || w.slotGen[i] != uint32(id>>32) {
		return nil
	}
	return w.slots[i]
}

func (w *Worker) slotFree(id uint64) {
	i := uint32(id) - 1
	if uint32(id) == 0 || int(i) >= len(w.slots) || w.slotGen[i] != uint32(id>>32) || w.slots[i] == nil {
		return
	}
	w.slots[i] = nil
	w.freeSlots = append(w.freeSlots, i)
}
