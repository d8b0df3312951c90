package verbs

import (
	"context"
	"net/netip"
	"runtime"
	"time"

	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/uct"
)

// now returns the engine's monotonic clock in ns.
func (d *Device) now() int64 { return int64(time.Since(d.epoch)) }

// markReady queues qp for the transmit stage.
func (d *Device) markReady(qp *QP) {
	if !qp.inReady {
		qp.inReady = true
		d.ready = append(d.ready, qp)
	}
}

// deferAck holds back the ACK qp's responder just queued for a request
// that completed a receive: the consumer of that completion is likely to
// answer, and the ACK then leaves in the same sendmmsg as the answer
// (after it). A deferred ACK goes out with the next batch the device
// sends, or at the end of a pass that finds the socket empty or has
// held it long enough (releaseAcks); the IB spec lets a responder
// coalesce ACKs, and the requester's ACK timeout (16 ms at the least
// here, usually far more) is never at risk.
func (d *Device) deferAck(qp *QP) {
	if !qp.inAcks {
		qp.inAcks = true
		d.acks = append(d.acks, qp)
	}
}

// releaseAcks ends a pass's hold on the deferred ACKs: they become ready
// for its transmit stage when its receive found the socket empty (the
// peer's burst, if any, has ended) or when the pass and those before it
// since the ACKs were last sent received ackHoldMax packets. While
// datagrams keep arriving one pass at a time (a peer's multi-message
// burst taken by single receives), the requests they carry are thus
// acknowledged by one coalesced ACK instead of one ACK each; a deferred
// ACK still rides along with any batch the device sends (flushTx).
func (d *Device) releaseAcks(received bool) {
	if len(d.acks) == 0 {
		d.ackHeld = 0
		return
	}
	if received && d.ackHeld < ackHoldMax {
		return
	}
	d.ackHeld = 0
	d.promoteAcks()
}

// ackHoldMax bounds the packets received while deferred ACKs are held
// (releaseAcks): an eighth of the requester's largest window (512 PSNs),
// so that a streaming peer does not wait for an ACK.
const ackHoldMax = 64

// promoteAcks makes every deferred ACK ready for the transmit stage.
func (d *Device) promoteAcks() {
	for i, qp := range d.acks {
		qp.inAcks = false
		d.markReady(qp)
		d.acks[i] = nil
	}
	d.acks = d.acks[:0]
}

// rideAcks appends the deferred ACKs to the transmit batch, behind what
// it already holds.
func (d *Device) rideAcks() {
	for i, qp := range d.acks {
		qp.inAcks = false
		d.acks[i] = nil
		if qp.respondLocked(txBudget) == 0 || len(qp.resp.out) > 0 {
			d.markReady(qp)
		}
	}
	d.acks = d.acks[:0]
}

// ring sends the packets that posts left in the transmit batch (the
// doorbell: see PostSend).
func (d *Device) ring() {
	if d.tx.n > 0 {
		d.flushTx()
	}
}

// sendDeferredAck sends qp's deferred ACK now, and the posts waiting in
// the batch, before the QP leaves its state (ERR, RESET, destroy) and
// its responder output and send queue are dropped.
func (qp *QP) sendDeferredAck() {
	d := qp.d
	if !qp.inAcks {
		d.ring()
		return
	}
	qp.inAcks = false
	for i, q := range d.acks {
		if q == qp {
			d.acks = append(d.acks[:i], d.acks[i+1:]...)
			break
		}
	}
	qp.respondLocked(1 << 30)
	d.tx.flush(d.sock.fd.Int(), &d.ctr)
}

// unready drops qp from the engine's lists (RESET, ERR, destroy).
func (d *Device) unready(qp *QP) {
	if qp.inAcks {
		qp.inAcks = false
		for i, q := range d.acks {
			if q == qp {
				d.acks = append(d.acks[:i], d.acks[i+1:]...)
				break
			}
		}
	}
	if qp.inReady {
		qp.inReady = false
		for i, q := range d.ready {
			if q == qp {
				d.ready = append(d.ready[:i], d.ready[i+1:]...)
				break
			}
		}
	}
	qp.req.deadline, qp.req.rnrUntil = 0, 0
}

// armTimer makes sure the timer scan looks at qp.
func (d *Device) armTimer(qp *QP) {
	t := qp.nextDeadline()
	if t == 0 {
		return
	}
	if !qp.inTimed {
		qp.inTimed = true
		d.timed = append(d.timed, qp)
	}
	if d.nextTimer == 0 || t < d.nextTimer {
		d.nextTimer = t
	}
}

// Progress runs the engine once: it receives and processes waiting
// packets, fires due timers (retransmission, RNR waits) and sends what
// became ready. It never blocks for long: at most a short wait when the
// socket's send buffer is full.
func (d *Device) Progress() {
	d.mu.Lock()
	yield := d.progressFor(nil)
	d.mu.Unlock()
	if yield {
		runtime.Gosched()
	}
}

// yieldEvery is how often an owner that keeps running the engine yields
// the processor (runtime.Gosched, after its pass, with the engine
// unlocked). A busy-polling goroutine otherwise runs until the runtime
// preempts it, after 10 ms: a signal, and after each preemption the
// runtime's monitor thread wakes every 20 µs for a millisecond and more
// (on a pinned process, on the polling thread's own CPU, a context switch
// each time). A goroutine that yields is never preempted, and the
// monitor backs off to 10 ms sleeps.
const yieldEvery = int64(time.Millisecond)

// rxTransmitEvery is how many received packets the engine handles
// before it sends what became ready meanwhile.
const rxTransmitEvery = 64

// maxRxRounds bounds the recvmmsg rounds of one Progress so that sending
// is not starved by a flood.
const maxRxRounds = 16

func (d *Device) progressLocked() { d.progressFor(nil) }

// progressFor is progressLocked for an owner that polls as part of
// progress group g (nil: none), whose pass it marks in g. It reports
// whether the owner should yield the processor once it has unlocked the
// engine (see yieldEvery).
func (d *Device) progressFor(g *uct.ProgressGroup) (yield bool) {
	if d.closed {
		return false
	}
	// Posts made since the last pass leave first, ahead of anything the
	// received packets make ready.
	d.ring()
	now := d.now()
	d.lastProg.Store(now)
	if now >= d.yieldAt {
		d.yieldAt = now + yieldEvery
		yield = true
	}
	if g != nil {
		g.Enter(now + d.grpOff)
		defer g.Leave()
	}
	d.armWatchdog(now)
	handled := 0
	received := false
	for round := 0; round < maxRxRounds; round++ {
		n, err := d.rx.recv(d.sock.fd.Int())
		d.ctr.RxCalls++
		if n == 0 {
			d.ctr.RxEmpty++
		}
		d.rxFailedLocked(err)
		received = received || n > 0
		for i := 0; i < n; i++ {
			b, src := d.rx.packet(i)
			seg := d.rx.segSize(i)
			if seg != 0 && len(b) > seg {
				d.ctr.RxCoalesced++
			}
			for k := uint16(0); ; k++ {
				var p []byte
				p, b = groNext(b, seg)
				d.handle(p, src, k)
				handled++
				d.ackHeld++
				if len(b) == 0 {
					break
				}
			}
			if handled >= rxTransmitEvery && len(d.ready) > 0 {
				// A batch of coalesced datagrams holds up to 960
				// packets: answer (ACKs, READ responses, the next
				// requests the window lets out) while handling it,
				// not only at its end, so the peer is not left
				// waiting with its window full.
				d.transmit()
				handled = 0
			}
		}
		if n < batchLen {
			break
		}
		// Keep ACKs and READ responses flowing during a long burst.
		d.promoteAcks()
		d.transmit()
	}
	d.releaseAcks(received)
	if d.nextTimer != 0 {
		// A pass that received nothing took a system call's time: the
		// clock read at its start serves, one read less per empty poll.
		if received {
			now = d.now()
		}
		if now >= d.nextTimer {
			d.runTimers(now)
		}
	}
	d.transmit()
	return yield
}

// transmit runs the send stage of every ready QP and flushes the batch.
func (d *Device) transmit() {
	for len(d.ready) > 0 {
		ready := d.ready
		d.ready = nil
		for _, qp := range ready {
			qp.inReady = false
		}
		for _, qp := range ready {
			qp.sendLocked()
		}
		if len(d.ready) > 0 {
			// QPs out of budget: let the socket drain first.
			d.tx.flush(d.sock.fd.Int(), &d.ctr)
			break
		}
	}
	d.flushTx()
}

// flushTx sends the transmit batch, with the deferred ACKs riding along
// if it holds anything.
func (d *Device) flushTx() {
	if d.tx.n > 0 && len(d.acks) > 0 {
		d.rideAcks()
	}
	d.tx.flush(d.sock.fd.Int(), &d.ctr)
}

func (d *Device) runTimers(now int64) {
	d.nextTimer = 0
	kept := d.timed[:0]
	for _, qp := range d.timed {
		qp.timerLocked(now)
		t := qp.nextDeadline()
		if t == 0 || qp.destroyed {
			qp.inTimed = false
			continue
		}
		kept = append(kept, qp)
		if d.nextTimer == 0 || t < d.nextTimer {
			d.nextTimer = t
		}
	}
	for i := len(kept); i < len(d.timed); i++ {
		d.timed[i] = nil
	}
	d.timed = kept
}

// handle processes one received UDP payload, segment k of its datagram.
// A peer's GSO send gives its k-th segment IP ID k, and the receive
// path's GRO keeps a send whole, so the ICRC check guesses ID k first.
func (d *Device) handle(b []byte, src netip.AddrPort, k uint16) {
	d.ctr.RxPackets++
	if d.rdmaDisabled {
		d.ctr.RxDropped++ // a disabled device receives nothing
		return
	}
	if d.handlePlaced(b, src, k) {
		return
	}
	if err := d.rxICRC.CheckICRCID(b, src, d.local, k); err != nil {
		d.corruptLocked(src.String(), err)
		return
	}
	p := &d.pkt
	if err := roce.Decode(b, p); err != nil {
		d.ctr.RxMalformed++
		return
	}
	qp := d.qps[p.BTH.DestQP]
	// rxe's rule: the IP source must be the address in the QP's remote GID.
	if qp == nil || qp.dst.Addr() != src.Addr() {
		d.ctr.RxDropped++
		return
	}
	if p.BTH.Opcode.IsResponse() {
		qp.handleResponse(p)
	} else {
		qp.handleRequest(p)
	}
}

// NextTimeout returns how long until the engine's next timer is due (a
// negative value: none is armed).
func (d *Device) NextTimeout() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.acks) > 0 || d.tx.n > 0 {
		return 0 // the next pass sends them
	}
	if d.nextTimer == 0 {
		return -1
	}
	return time.Duration(max(0, d.nextTimer-d.now()))
}

// Wait blocks until the socket is readable, the next timer is due or ctx
// ends (then it returns ctx.Err()). Call Progress after it returns nil.
func (d *Device) Wait(ctx context.Context) error {
	return d.wait(ctx, -1)
}

// waitSlice bounds one poll so that ctx is checked regularly.
const waitSlice = 10 * time.Millisecond

func (d *Device) wait(ctx context.Context, extraFd int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := waitSlice
	if nt := d.NextTimeout(); nt >= 0 && nt < t {
		t = nt
	}
	if dl, ok := ctx.Deadline(); ok {
		if r := time.Until(dl); r < t {
			t = max(0, r)
		}
	}
	fds := []int{d.sock.fd.Int()}
	if extraFd >= 0 {
		fds = append(fds, extraFd)
	}
	pollFds(fds, t)
	return ctx.Err()
}

// background is the watchdog goroutine: if nobody has run Progress for
// an interval (the owner stopped polling, or sleeps in a wait that does
// not drive the engine), it runs Progress itself so that ACKs, READ
// responses and retransmissions are not held up for the peer. It only
// tries the engine mutex (TryLock), so it never delays an owner that is
// progressing.
//
// It has two modes. Timing: it sleeps on d.wd's timer, whose expiry every
// Progress pushes back (see armWatchdog), so while anyone polls it does
// not wake at all. Watching: once nobody has run the engine for an
// interval, or as soon as an owner says it goes to sleep (Sleep), it runs
// Progress and then sleeps until a packet arrives or an engine timer
// (retransmission, RNR wait, deferred ACK) is due, and at the latest an
// interval later (a timer an owner set meanwhile), and runs Progress then
// too: packets that arrive while nobody polls are received at once. When
// it wakes and finds that
// someone else ran the engine since it last looked, that someone polls:
// it goes back to timing, so a polling owner's packets do not wake it.
// Neither mode takes the device over while the progress group of an
// owner that has not said it sleeps is active (group.go): that owner
// drives a sibling device and comes back to this one.
func (d *Device) background() {
	defer d.wg.Done()
	iv := d.wdIv
	watching := false
	slept := false // watching since an owner said it sleeps
	var seen int64 // watching: the last engine run it knows of
	for {
		why := d.wd.wait()
		if why == 0 {
			return
		}
		select {
		case <-d.stop:
			return
		default:
		}
		last := d.lastProg.Load()
		if d.sleeping.Swap(false) {
			// An owner goes to sleep: watch from its last run on.
			watching, seen, slept = true, last, true
			d.wd.watch(true)
		}
		now := d.now()
		if watching && (last != seen || !slept && d.ownerBusy(now, now-last)) {
			// Someone else ran the engine since: they poll. Or the
			// owner, which did not say it sleeps, is busy with a
			// sibling device (group.go) and comes back to this one.
			watching, slept = false, false
			d.wd.watch(false)
		}
		if !watching {
			idle := now - last
			if idle < iv {
				d.wd.armSafe(time.Duration(iv - idle))
				continue
			}
			if d.ownerBusy(now, idle) {
				d.wd.armSafe(time.Duration(iv))
				continue
			}
		}
		if !d.mu.TryLock() {
			// The owner holds the engine: it runs it.
			watching, slept = false, false
			d.wd.watch(false)
			d.wd.armSafe(time.Duration(iv))
			continue
		}
		if d.closed {
			// Close is under way: the timer may be closed already.
			d.mu.Unlock()
			return
		}
		d.ctr.WatchdogRuns++
		d.progressLocked()
		seen = d.lastProg.Load()
		// Wake for packets, for the next engine timer, and at the latest
		// after an interval: a timer or deferred ACK that an owner's
		// PostSend or Progress sets meanwhile is not seen here.
		next := time.Duration(iv)
		if len(d.acks) > 0 || d.tx.n > 0 {
			next = 1
		} else if d.nextTimer != 0 {
			next = min(next, time.Duration(max(1, d.nextTimer-d.now())))
		}
		d.wd.arm(next)
		d.mu.Unlock()
		watching = true
		d.wd.watch(true)
	}
}

// Sleep tells the device that its caller stops running the engine to
// sleep until a completion event (on a CompChannel it armed a CQ for):
// the background goroutine then receives the packets that arrive and runs
// the engine for them, so the caller need not watch the socket (Fd)
// itself, and several sleepers on one device do not all wake for every
// packet. It reports whether the device has a background goroutine; if
// not (Config.ProgressInterval < 0), the caller must watch Fd.
func (d *Device) Sleep() bool {
	d.mu.Lock()
	d.ring()
	d.mu.Unlock()
	if d.wd == nil {
		return false
	}
	d.sleeping.Store(true)
	d.wd.armSafe(1)
	return true
}

// armWatchdog pushes the watchdog's expiry back to an interval from now,
// at most every half interval: one timerfd_settime a millisecond (by
// default) while the owner polls. The engine mutex is held.
func (d *Device) armWatchdog(now int64) {
	if d.wd != nil && now-d.wdArmed >= d.wdIv/2 {
		d.wdArmed = now
		d.wd.arm(time.Duration(d.wdIv))
	}
}
