package ucp

import (
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// The sequenced channel. With failover on (Config.Failover), every ucp
// message of an endpoint but wireup and keepalive travels inside an amSeq
// message that numbers it per endpoint, whatever lane carries it, and
// carries the cumulative acknowledgement of what this side delivered. The
// sender writes each message into its replay log (failover.MsgLog, whose
// cells are reused in place), sends it from there and keeps it until the
// peer acknowledges it; the receiver's
// failover.RecvWindow delivers every number once and in order to the
// inner message's handler, so tag matching sees the peer's messages in
// the order they were sent even when a replay after a failover brings
// some of them twice. Acknowledgements ride on every sequenced message;
// a lone amSeqAck goes when a quarter of the window is owed, when a flush
// or a full log asks for one, and at every keepalive round while owed.
//
// An endpoint speaks sequenced when its worker has failover on, or when
// its peer does: the first amSeq that arrives turns the channel on. With
// failover off and a peer that has it off, ep.fo stays nil and the send
// and receive paths are those of before, at the cost of a nil check.

const (
	// seqLogLimit bounds the messages a sender keeps unacknowledged;
	// sends beyond it wait for an acknowledgement (back-pressure).
	seqLogLimit = 1024
	// seqWindow is how many messages the receiver holds ahead of a
	// missing one.
	seqWindow = seqLogLimit
	// seqAckEvery: a lone acknowledgement goes once this many delivered
	// messages are owed.
	seqAckEvery = seqWindow / 4
	// seqAckLazy: the peer's acknowledgements that ride on its messages
	// are only noted; the log takes the last one when it covers every
	// message logged (MsgLog.SlotAcked and AckAll, which cost no loop),
	// or when the log holds this many messages (or is full, or a flush or
	// a failover asks), so taking them costs most messages no call.
	seqAckLazy = 16
)

// seqCell: the log's cells keep buffers up to this size across
// acknowledgements, so messages up to it are written once, in place.
const seqCell = 256

// epSeq is the sequenced channel of one endpoint (lock held for all of
// it).
type epSeq struct {
	// what every message reads, first: the fewest cache lines
	log             failover.MsgLog             // whole amSeq messages, as sent, in reused cells
	ackIn           uint32                      // the last acknowledgement that rode on a message, not taken yet (seqAckIn)
	ackDue, wantDue bool                        // a lone ack could not go yet (wantDue: asking for one)
	asked           bool                        // an ack was asked for and none came since
	win             failover.RecvWindow[[]byte] // held: inner id + inner message (copies)
	fov             foState                     // failover in progress (replay.go)

	push  func(uint64, []byte) // appends to ready, bound once
	ready [][]byte             // delivered in order by the current Accept
	amMax int                  // largest AM payload of a sequenced message on every lane

	scratch [64]byte

	syncs  syncNums     // numbers of the syncs (syncnum.go)
	fenced []fencedXfer // writes that move once fov's sync is answered (fence.go)
	atm    atomics      // atomic operations as active messages (atomic_am.go)
}

func newEpSeq() *epSeq {
	// the log and the window are part of the channel: one less pointer
	// to follow per message
	f := &epSeq{log: *failover.NewMsgLog(seqLogLimit, seqCell), win: *failover.NewRecvWindow[[]byte](seqWindow)}
	f.push = func(_ uint64, v []byte) { f.ready = append(f.ready, v) }
	f.atm.init()
	return f
}

// seqStart turns ep's sequenced channel on (lock held).
func (ep *Endpoint) seqStart() {
	if ep.fo == nil {
		ep.fo = newEpSeq()
		for i := range ep.lanes {
			if ep.lanes[i].health == nil {
				ep.lanes[i].health = failover.NewHealth(ep.w.cfg.Failover, time.Now())
			}
		}
		if ep.lanes != nil {
			ep.pickLanes()
		}
	}
}

// seqLimits derives the protocol limits of a sequenced endpoint (lock
// held, after pickLanes): a logged message must fit an AM fragment of
// every lane it may be replayed on, and eager payloads are copied into
// the log, so there is no eager zero-copy.
func (ep *Endpoint) seqLimits() {
	m := 0
	for i := range ep.lanes {
		if a := &ep.lanes[i].attr; a.Cap.Has(uct.CapAMBcopy) && (m == 0 || a.AMMaxBcopy < m) {
			m = a.AMMaxBcopy
		}
	}
	f := ep.fo
	f.amMax = m - seqHdr
	ep.bcopyMax = f.amMax - eagerHdr
	ep.shortMax = min(ep.shortMax, ep.bcopyMax)
	ep.zcopyMin = ThreshInf
	ep.rndvMin = ep.bcopyMax + 1
	if t := ep.w.cfg.RndvThresh; t > 0 && t < ep.rndvMin {
		ep.rndvMin = t
	}
	if ep.rmaLane < 0 {
		ep.rndvMin = ThreshInf
	}
}

// amMaxBcopy is the largest AM payload ep's protocols put in one
// fragment.
func (ep *Endpoint) amMaxBcopy() int {
	if ep.fo != nil {
		return ep.fo.amMax
	}
	return ep.lanes[ep.amLane].attr.AMMaxBcopy
}

// amSend sends an AM message of ucp (hdr then data) on ep's AM lane,
// sequenced when the channel is on (lock held).
func (ep *Endpoint) amSend(id uint8, hdr, data []byte) error {
	if ep.fo != nil {
		return ep.seqSend(id, hdr, data)
	}
	_, err := ep.lanes[ep.amLane].ep.AMBcopy(id, hdr, data)
	return err
}

// seqSend numbers the message (inner AM id, hdr, data), logs a copy and
// sends it on the AM lane (lock held). A full log or a failover waiting
// for its sync is back-pressure (uct.ErrNoResource). A lane that breaks
// under the send has still the message logged: laneFault moves the
// endpoint to another lane and the replay sends it there, so the send
// succeeds unless the endpoint fails.
func (ep *Endpoint) seqSend(id uint8, hdr, data []byte) error {
	b, err := ep.seqSlot(seqHdr+len(hdr)+len(data), id)
	if err != nil {
		return err
	}
	copy(b[seqHdr:], hdr)
	copy(b[seqHdr+len(hdr):], data)
	return ep.seqPost(b)
}

// seqSlot returns the replay log's cell for the next sequenced message,
// n bytes with the sequenced header (inner AM id) written, for the
// caller to write the inner message after seqHdr and pass to seqPost
// (lock held). A full log or a failover waiting for its sync is
// back-pressure (uct.ErrNoResource).
func (ep *Endpoint) seqSlot(n int, id uint8) ([]byte, error) {
	f := ep.fo
	if f.fov.syncing || f.fov.resend != 0 {
		return nil, uct.ErrNoResource // the replay goes first
	}
	if f.log.Len() >= seqAckLazy || f.ackIn == uint32(f.log.Next()-1) && f.log.Len() != 0 {
		ep.w.seqAckIn(ep) // many, or every one (request and response): seqTag
	}
	b := f.log.Slot(n)
	if b == nil {
		ep.w.seqAck(ep, true)
		return nil, uct.ErrNoResource
	}
	putSeqHdr(b, ep.rid, uint32(f.log.Next()), uint32(f.win.Delivered()), id)
	return b, nil
}

// seqPost sends the message seqSlot gave and numbers it in the log
// (lock held).
func (ep *Endpoint) seqPost(b []byte) error {
	return ep.seqSent(ep.lanes[ep.amLane].sendSeq(b))
}

// seqSent numbers the message seqSlot gave in the log once the AM lane
// took it or failed with a fault (laneFault moves it to another lane,
// where the replay sends it); a send refused for now is not logged, its
// cell is the next message's (lock held).
func (ep *Endpoint) seqSent(err error) error {
	f := ep.fo
	if err == nil {
		f.log.Commit()
		f.win.TakeAck()
		return nil
	}
	if retryLater(err) {
		ep.w.routeLost(ep, ep.amLane, err)
		return err
	}
	f.log.Commit()
	ep.w.laneFault(ep, ep.amLane, err)
	if ep.err != nil {
		return err
	}
	return nil
}

// sendSeq sends the sequenced message b on ln: as a short message where
// it fits one (its first 8 bytes as the header, in the byte order the
// eager path's tag uses), which costs the transport less than a copy of
// parts, else by copy.
func (ln *lane) sendSeq(b []byte) error {
	if len(b)-8 <= ln.attr.AMMaxShort && ln.attr.Cap.Has(uct.CapAMShort) {
		return ln.ep.AMShort(amSeq, ne.Uint64(b), b[8:])
	}
	_, err := ln.ep.AMBcopy(amSeq, b, nil)
	return err
}

// seqAckIn takes the acknowledgement noted from the peer's last message
// (lock held).
func (w *Worker) seqAckIn(ep *Endpoint) {
	if f := ep.fo; f.ackIn != uint32(f.log.Acked()) {
		w.seqTakeAck(ep, f.ackIn)
	}
}

// seqTakeAck takes the peer's cumulative acknowledgement (low 32 bits)
// (lock held). An acknowledgement of messages never sent is ignored.
func (w *Worker) seqTakeAck(ep *Endpoint, ack uint32) {
	f := ep.fo
	cum := failover.Unwrap32(f.log.Acked(), ack)
	switch {
	case cum <= f.log.Acked():
		return
	case cum == f.log.Next()-1:
		f.log.AckAll() // the next message takes the cell just freed
	case f.log.Ack(cum) != nil:
		return
	}
	f.asked = false
	if !ep.queue.empty() {
		w.toBacklog(ep) // sends waiting for room in the log
	}
}

// seqAck sends a lone acknowledgement, asking for one back if want
// (lock held); what cannot go now goes from the backlog.
func (w *Worker) seqAck(ep *Endpoint, want bool) {
	f := ep.fo
	if want && f.asked {
		return
	}
	if ep.err != nil || ep.closed {
		return
	}
	if !ep.ridKnown || ep.amLane < 0 || !w.canPost() {
		f.ackDue, f.wantDue = true, f.wantDue || want
		w.toBacklog(ep)
		return
	}
	var flags uint8
	if want {
		flags = seqAckWant
	}
	b := encodeSeqAck(f.scratch[:0], ep.rid, uint32(f.win.Delivered()), flags)
	_, err := ep.lanes[ep.amLane].ep.AMBcopy(amSeqAck, b, nil)
	switch {
	case err == nil:
		f.win.TakeAck()
		f.ackDue = false
		if want {
			f.wantDue, f.asked = false, true
		}
	case retryLater(err):
		f.ackDue, f.wantDue = true, f.wantDue || want
		w.toBacklog(ep)
	default:
		w.laneFault(ep, ep.amLane, err)
	}
}

// seqPending sends what the channel could not send before: a failover's
// sync, a lone ack (lock held, from drainBacklog).
func (w *Worker) seqPending(ep *Endpoint) {
	f := ep.fo
	if f.fov.syncDue {
		w.sendSync(ep, false)
	}
	if f.fov.replyDue {
		w.sendSync(ep, true)
	}
	if f.fov.resend != 0 {
		w.resend(ep)
	}
	if f.ackDue {
		w.seqAck(ep, f.wantDue)
	}
}

// seqMark is the sequence number of the last message sent on ep so far
// (0 without the channel): a flush started now waits for its
// acknowledgement.
func (ep *Endpoint) seqMark() uint64 {
	if ep.fo == nil {
		return 0
	}
	return ep.fo.log.Next() - 1
}

// seqAcked reports whether the peer acknowledged every message of ep up
// to upto, and asks for an acknowledgement if not (lock held).
func (w *Worker) seqAcked(ep *Endpoint, upto uint64) bool {
	f := ep.fo
	if f == nil || ep.err != nil || ep.closed {
		return true
	}
	upto = min(upto, f.log.Next()-1)
	w.seqAckIn(ep)
	if f.log.Acked() >= upto {
		return true
	}
	w.seqAck(ep, true)
	return false
}

// onSeqLocked is onSeq for ep (nil: none) under the lock, which it
// releases: it takes the acknowledgement, then hands the message and
// those it releases from the window, in order, to their handlers,
// without the worker's lock.
func (w *Worker) onSeqLocked(arg any, ep *Endpoint, data []byte, flags uct.AMFlags) {
	if ep == nil || ep.err != nil {
		if ep == nil {
			w.stats.ClosedDrops++
		}
		w.unlockCB()
		if ep != nil {
			w.seqInner(arg, data[seqHdr-1:], flags) // its handler counts the drop
		}
		return
	}
	if ep.fo == nil {
		ep.seqStart()
	}
	f := ep.fo
	ep.heardOn(arg)
	if a := le.Uint32(data[8:]); int32(a-f.ackIn) > 0 {
		f.ackIn = a // the newest (messages on two lanes may cross)
	}
	if !ep.queue.empty() {
		w.seqAckIn(ep) // sends may wait for room in the log
	}
	next := f.win.Delivered() + 1
	seq := failover.Unwrap32(next-1, le.Uint32(data[4:]))
	v := data[seqHdr-1:] // inner id + inner message
	if f.win.InOrder(seq) {
		// next in order, nothing held
		if f.win.Owed() >= seqAckEvery {
			w.seqAck(ep, false)
		}
		if v[0] == amEager && len(v) > eagerHdr && le.Uint32(v[1+8:]) == ep.id {
			// an eager tag message of ep: matched under the lock held
			w.eagerArrive(ep, ne.Uint64(v[1:]), v[1+eagerHdr:])
			w.unlockCB()
			return
		}
		w.unlockCB()
		w.seqInner(arg, v, flags)
		return
	}
	if seq != next {
		v = append([]byte(nil), v...) // held, or dropped
	}
	vd, err := f.win.Accept(seq, v, f.push)
	if vd == failover.Duplicate && err == nil {
		w.stats.Duplicates++
	}
	if f.win.Owed() >= seqAckEvery {
		w.seqAck(ep, false)
	}
	ready := f.ready
	f.ready = f.ready[:0]
	w.unlockCB()
	for i, v := range ready {
		w.seqInner(arg, v, flags)
		ready[i] = nil
	}
}

// seqInner hands one inner message (its AM id, then the message) to its
// handler.
func (w *Worker) seqInner(arg any, v []byte, flags uct.AMFlags) {
	d := v[1:]
	switch v[0] {
	case amEager:
		w.onEager(arg, d, flags)
	case amRTS:
		w.onRTS(arg, d, flags)
	case amATS:
		w.onATS(arg, d, flags)
	case amRTR:
		w.onRTR(arg, d, flags)
	case amATP:
		w.onATP(arg, d, flags)
	case amUser:
		w.onUser(arg, d, flags)
	case amClose:
		w.onClose(arg, d, flags)
	case amUserFrag:
		w.onUserFrag(arg, d, flags)
	case amUserRTS:
		w.onUserRTS(arg, d, flags)
	case amAtomicReq:
		w.onAtomicReq(arg, d, flags)
	case amAtomicRep:
		w.onAtomicRep(arg, d, flags)
	}
}

// onSeqAck receives a lone acknowledgement, answering one that asks.
func (w *Worker) onSeqAck(arg any, data []byte, _ uct.AMFlags) {
	dst, ack, flags, err := decodeSeqAck(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(dst)
	if ep == nil || ep.err != nil {
		return
	}
	ep.seqStart()
	ep.heardOn(arg)
	w.seqTakeAck(ep, ack)
	if flags&seqAckWant != 0 {
		w.seqAck(ep, false)
	}
}

// seqHandlers are the channel's AM handlers (setHandlers).
func (w *Worker) seqHandlers() []struct {
	id uint8
	h  uct.AMHandler
} {
	return []struct {
		id uint8
		h  uct.AMHandler
	}{{amSeq, w.onSeq}, {amSeqAck, w.onSeqAck}, {amSync, w.onSync}}
}

// ctlSend sends a control message of ucp; keepalive heartbeats are not
// sequenced (they speak of the lane, not the conversation).
func (ep *Endpoint) ctlSend(id uint8, b []byte) error {
	if ep.fo != nil && id != amKeepalive {
		return ep.seqSend(id, b, nil)
	}
	_, err := ep.lanes[ep.amLane].ep.AMBcopy(id, b, nil)
	return err
}

// sendTagSeq sends an eager tag message of a request through the
// sequenced channel (seqTag): its payload is copied into the log, so it
// completes once sent (lock held).
func (ep *Endpoint) sendTagSeq(r *Request) error {
	if err := ep.seqTag(r.buf, r.tag); err != nil {
		return err
	}
	ep.w.complete(r, nil)
	return nil
}

// seqReset starts ep's channel afresh: the peer replaced its endpoint
// (it closed or purged it and connected again), so the numbers of the
// old conversation mean nothing to it (lock held). Our atomics it never
// answered have an unknown outcome.
func (w *Worker) seqReset(ep *Endpoint) {
	w.atomicsLost(ep, uct.ErrConnectionReset)
	ep.fo = nil
	ep.seqStart()
}
