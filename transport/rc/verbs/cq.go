package verbs

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/uct"
)

// CQ is a completion queue (ibv_cq). Its entries are filled by the device's
// progress engine; Poll runs the engine once and then returns entries.
type CQ struct {
	d     *Device
	id    int
	ring  []WC
	head  int
	n     int
	ch    *CompChannel
	armed bool
	solic bool // armed for solicited completions only
	err   error
	users int // QPs using it
	// overrun is set once the CQ overflowed; later completions are lost.
	overrun bool
	closed  bool
	group   *uct.ProgressGroup // the loop that polls it (group.go)
}

// CreateCQ creates a completion queue with room for cqe entries; ch, if not
// nil, receives its completion events after ReqNotify.
func (d *Device) CreateCQ(cqe int, ch *CompChannel) (*CQ, error) {
	if cqe <= 0 || cqe > 1<<20 {
		return nil, fmt.Errorf("verbs: create cq: cqe %d: %w", cqe, uct.ErrInvalidParam)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("verbs: create cq: %w", uct.ErrClosed)
	}
	d.cqSeq++
	return &CQ{d: d, id: d.cqSeq, ring: make([]WC, cqe), ch: ch}, nil
}

// Cap returns the number of entries the CQ holds.
func (cq *CQ) Cap() int { return len(cq.ring) }

// Poll runs the device's progress engine and moves up to len(wc) completions
// into wc, oldest first, returning how many.
func (cq *CQ) Poll(wc []WC) int {
	k, yield := cq.poll(wc)
	if yield {
		runtime.Gosched() // see yieldEvery
	}
	return k
}

// poll runs the engine and takes the completions; it reports whether
// the caller should yield the processor.
func (cq *CQ) poll(wc []WC) (int, bool) {
	d := cq.d
	d.mu.Lock()
	defer d.mu.Unlock()
	yield := d.progressFor(cq.group)
	return cq.popLocked(wc), yield
}

// PollNoProgress returns completions already queued without running the
// engine.
func (cq *CQ) PollNoProgress(wc []WC) int {
	cq.d.mu.Lock()
	defer cq.d.mu.Unlock()
	return cq.popLocked(wc)
}

func (cq *CQ) popLocked(wc []WC) int {
	k := 0
	for k < len(wc) && cq.n > 0 {
		wc[k] = cq.ring[cq.head]
		cq.head++
		if cq.head == len(cq.ring) {
			cq.head = 0
		}
		cq.n--
		k++
	}
	return k
}

// Err returns the CQ's error after an overrun (wrapping uct.ErrOverrun).
func (cq *CQ) Err() error {
	cq.d.mu.Lock()
	defer cq.d.mu.Unlock()
	return cq.err
}

// ReqNotify arms the CQ (ibv_req_notify_cq): the next completion (with
// solicitedOnly, the next solicited receive or error completion) sends one
// event to the CQ's completion channel.
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if cq.ch == nil {
		return fmt.Errorf("verbs: req notify: cq has no completion channel: %w", uct.ErrInvalidParam)
	}
	cq.d.mu.Lock()
	defer cq.d.mu.Unlock()
	if cq.closed {
		return fmt.Errorf("verbs: req notify: %w", uct.ErrClosed)
	}
	cq.armed, cq.solic = true, solicitedOnly
	// Whoever arms goes to sleep next: what it posted leaves first.
	cq.d.ring()
	return nil
}

// destroy marks the CQ closed unless QPs use it (ErrBusy).
func (cq *CQ) destroy() error {
	cq.d.mu.Lock()
	defer cq.d.mu.Unlock()
	if cq.users > 0 {
		return fmt.Errorf("verbs: destroy cq: %d QPs use it: %w", cq.users, uct.ErrBusy)
	}
	cq.closed = true
	cq.d.dropGroupLocked(cq.group)
	cq.group = nil
	return nil
}

// pushLocked appends a completion. On overflow it reports a CQ error and
// moves every QP using the CQ to ERR.
func (cq *CQ) pushLocked(wc *WC) {
	if cq.closed || cq.overrun {
		return
	}
	if cq.n == len(cq.ring) {
		cq.overrun = true
		cq.err = fmt.Errorf("verbs: cq %d: %w", cq.id, uct.ErrOverrun)
		d := cq.d
		d.postEvent(uct.EventCQError, fmt.Sprintf("cq %d", cq.id), cq, cq.err)
		for _, qp := range d.qps {
			if qp.scq == cq || qp.rcq == cq {
				qp.fatalLocked(uct.EventQPFatal, cq.err)
			}
		}
		return
	}
	i := cq.head + cq.n
	if i >= len(cq.ring) {
		i -= len(cq.ring)
	}
	cq.ring[i] = *wc
	cq.n++
	if cq.armed && (!cq.solic || wc.Flags&WCSolicited != 0 || wc.Status != WCSuccess) {
		cq.armed = false
		cq.ch.notify(cq)
	}
}

// CompChannel is a completion event channel (ibv_comp_channel). Fd is an
// eventfd that becomes readable when an armed CQ gets a completion, for
// use in a caller's own poll loop; GetCQEvent blocks, driving the
// device's progress engine while it waits.
type CompChannel struct {
	d      *Device
	efd    *fd.FD
	mu     sync.Mutex
	ready  []*CQ
	wake   chan struct{}
	closed bool
}

// NewCompChannel creates a completion channel.
func (d *Device) NewCompChannel() (*CompChannel, error) {
	n, err := newEventFD()
	if err != nil {
		return nil, fmt.Errorf("verbs: create comp channel: %w", err)
	}
	return &CompChannel{d: d, efd: fd.New(n), wake: make(chan struct{}, 1)}, nil
}

// Fd returns the channel's eventfd. It is readable while events wait;
// GetCQEvent consumes them.
func (c *CompChannel) Fd() int { return c.efd.Int() }

func (c *CompChannel) notify(cq *CQ) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.ready = append(c.ready, cq)
	c.mu.Unlock()
	eventFDSignal(c.efd.Int())
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// TryGetCQEvent returns the CQ of the next completion event, or nil.
func (c *CompChannel) TryGetCQEvent() *CQ {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ready) == 0 {
		return nil
	}
	cq := c.ready[0]
	c.ready = c.ready[1:]
	if len(c.ready) == 0 {
		eventFDDrain(c.efd.Int())
	}
	return cq
}

// GetCQEvent waits for the next completion event (ibv_get_cq_event) and
// returns its CQ, which must be re-armed with ReqNotify for another
// event. While it waits it runs the device's progress engine whenever the
// socket is readable or a timer is due, so it needs no other goroutine.
func (c *CompChannel) GetCQEvent(ctx context.Context) (*CQ, error) {
	for {
		if cq := c.TryGetCQEvent(); cq != nil {
			return cq, nil
		}
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("verbs: get cq event: %w", uct.ErrClosed)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c.d.Progress()
		if cq := c.TryGetCQEvent(); cq != nil {
			return cq, nil
		}
		if err := c.d.wait(ctx, c.efd.Int()); err != nil {
			return nil, err
		}
	}
}

// Close releases the channel.
func (c *CompChannel) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.efd.Close()
}
