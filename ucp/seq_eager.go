package ucp

import "github.com/ucgo/ucgo/uct"

// Eager tag messages on the sequenced channel. They are most of what a
// latency-bound application sends, so their path is written out in one
// function on each side: the sender writes the sequenced header and the
// eager header straight into the replay log's cell, copies the payload
// after them and hands the cell to the lane; the receiver matches a
// message that is next in order under the lock it took to number it. The
// wire format is amSeq's, carrying an amEager message; the other
// messages take seqSend and seqInner.

// seqEagerHdr is the sequenced and the eager header of an eager tag
// message: its payload starts there.
const seqEagerHdr = seqHdr + eagerHdr

// seqTag sends an eager tag message through the sequenced channel
// (lock held): numbered, logged for replay and carrying the
// acknowledgement of what this side delivered. Back-pressure
// (uct.ErrNoResource) leaves nothing logged, as seqSend. The common case
// (no failover in progress, a short message, room in the log) is written
// out here; the rest takes seqTagSlow.
func (ep *Endpoint) seqTag(buf []byte, tag uint64) error {
	f := ep.fo
	n := seqEagerHdr + len(buf)
	ln := &ep.lanes[ep.amLane]
	if f.fov.syncing || f.fov.resend != 0 || n-8 > ln.attr.AMMaxShort || !ln.attr.Cap.Has(uct.CapAMShort) ||
		!ep.queue.empty() {
		return ep.seqTagSlow(buf, tag)
	}
	var b []byte
	if f.ackIn == uint32(f.log.Next()-1) {
		// the peer acknowledged every message logged (request and
		// response): the log is emptied at no cost and the message
		// takes the cell just freed, warm in the cache
		b = f.log.SlotAcked(n)
		f.asked = false
	} else if f.log.Len() < seqAckLazy {
		b = f.log.Slot(n)
	}
	if len(b) < seqEagerHdr {
		return ep.seqTagSlow(buf, tag)
	}
	putSeqHdr(b, ep.rid, uint32(f.log.Next()), uint32(f.win.Delivered()), amEager)
	putEagerHdr(b[seqHdr:], tag, ep.rid)
	copy(b[seqEagerHdr:], buf)
	if err := ln.ep.AMShort(amSeq, ne.Uint64(b), b[8:]); err != nil {
		return ep.seqSent(err)
	}
	f.log.Commit()
	f.win.TakeAck()
	return nil
}

// seqTagSlow is seqTag in any case (lock held).
func (ep *Endpoint) seqTagSlow(buf []byte, tag uint64) error {
	b, err := ep.seqSlot(seqEagerHdr+len(buf), amEager)
	if err != nil {
		return err
	}
	putEagerHdr(b[seqHdr:], tag, ep.rid)
	copy(b[seqEagerHdr:], buf)
	return ep.seqPost(b)
}

// onSeq receives a sequenced message (inside iface Progress) on an iface
// that does not name sources; boundSeq is its bound form.
func (w *Worker) onSeq(arg any, data []byte, flags uct.AMFlags) {
	if len(data) < seqHdr || data[12] != amEager && !seqInnerOK(data[12]) {
		return
	}
	w.lockCB()
	w.onSeqEP(arg, w.epByID(le.Uint32(data)), data, flags)
}

// onSeqEP receives a well-formed sequenced message for ep (nil: none)
// under the lock, which it releases. An eager tag message of ep next in
// order, with nothing held and no send waiting, is numbered delivered,
// its acknowledgement noted and matched here, whatever lane brought it;
// any other message takes onSeqLocked.
func (w *Worker) onSeqEP(arg any, ep *Endpoint, data []byte, flags uct.AMFlags) {
	if ep == nil || ep.fo == nil {
		w.onSeqLocked(arg, ep, data, flags)
		return
	}
	f := ep.fo
	next := f.win.Delivered() + 1
	// the low 32 bits of the next number are the next number: the window
	// holds far fewer than 2^31 (failover.Unwrap32)
	if data[12] != amEager || len(data) < seqEagerHdr || le.Uint32(data[4:]) != uint32(next) ||
		le.Uint32(data[seqHdr+8:]) != ep.id || ep.err != nil || !ep.queue.empty() || !f.win.InOrder(next) {
		w.onSeqLocked(arg, ep, data, flags)
		return
	}
	ep.heardOn(arg)
	if a := le.Uint32(data[8:]); int32(a-f.ackIn) > 0 {
		f.ackIn = a
	}
	if f.win.Owed() >= seqAckEvery {
		w.seqAck(ep, false)
	}
	w.eagerArrive(ep, ne.Uint64(data[seqHdr:]), data[seqEagerHdr:])
	w.unlockCB()
}
