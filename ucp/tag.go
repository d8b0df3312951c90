package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

// unexp is an unexpected message: eager data (copied) or a rendezvous
// announcement.
type unexp struct {
	m       match.Msg
	ep      *Endpoint
	data    []byte
	isRndv  bool
	rts     rts
	rkeyBuf []byte
}

func (w *Worker) getUnexp() *unexp {
	if n := len(w.unFree); n > 0 {
		u := w.unFree[n-1]
		w.unFree = w.unFree[:n-1]
		return u
	}
	u := &unexp{}
	u.m.Data = u
	return u
}

func (w *Worker) freeUnexp(u *unexp) {
	u.ep, u.isRndv = nil, false
	if cap(u.data) > 64<<10 {
		u.data = nil
	}
	if len(w.unFree) < 1024 {
		w.unFree = append(w.unFree, u)
	}
}

// TagSend sends buf with tag to the endpoint's peer. Small messages go
// eager (short, bcopy, zcopy by size), large ones by rendezvous. buf must
// stay untouched until the request completes. Messages on one endpoint
// with matching tags are never overtaken.
//
// As ucp_tag_send_nbx, TagSend returns nil when the send completed inside
// the call (an eager short or bcopy message the lane took) and p is nil
// or has neither Callback nor UserData: buf may be reused at once. Every
// Request method accepts a nil request as one that completed with
// success, so callers may treat the result alike either way.
func (ep *Endpoint) TagSend(buf []byte, tag uint64, p *Params) *Request {
	w := ep.w
	w.lock()
	var err error
	tried := false
	if p.noRequest() {
		if tried, err = ep.tagSendNow(buf, tag); tried && err == nil {
			w.unlock()
			return nil
		}
	}
	r := w.getReq(kTagSend, ep, p)
	r.buf, r.tag = buf, tag
	r.info = Info{Length: len(buf), Tag: tag}
	if tried {
		ep.postFailed(r, err)
	} else {
		ep.post(r)
	}
	w.unlock()
	return r
}

// sendTag posts r on the AM lane (lock held).
func (ep *Endpoint) sendTag(r *Request) error {
	n := len(r.buf)
	if r.sync {
		if ep.rmaLane < 0 {
			return fmt.Errorf("synchronous send needs a lane with get and put: %w", uct.ErrUnsupported)
		}
		return ep.sendRTS(r)
	}
	if ep.fo != nil && n < ep.rndvMin {
		return ep.sendTagSeq(r)
	}
	if n <= ep.shortMax {
		if err := ep.tagShort(r.buf, r.tag); err != nil {
			return err
		}
		ep.w.complete(r, nil)
		return nil
	}
	if n > ep.bcopyMax && n <= ep.tagFragMax && ep.fo == nil {
		return ep.sendTagFrags(r)
	}
	if n >= ep.rndvMin {
		return ep.sendRTS(r)
	}
	if n > ep.bcopyMax {
		return fmt.Errorf("%d bytes and no rendezvous lane: %w", n, uct.ErrInvalidParam)
	}
	if n >= ep.zcopyMin {
		hdr := ep.scratch[:eagerHdr]
		putEagerHdr(hdr, r.tag, ep.rid)
		r.deep = true
		r.iov[0] = r.buf
		r.comp.Count = 1
		err := ep.lanes[ep.amLane].ep.AMZcopy(amEager, hdr, r.iov[:], &r.comp)
		if err == uct.ErrInProgress {
			ep.inflight.push(r)
			return nil
		}
		if err != nil {
			return err
		}
	} else if err := ep.tagBcopy(r.buf, r.tag); err != nil {
		return err
	}
	ep.w.complete(r, nil)
	return nil
}

// sendRTS announces a rendezvous send (lock held).
func (ep *Endpoint) sendRTS(r *Request) error {
	r.deep = true
	m := rts{tag: r.tag, dst: ep.rid, length: uint64(len(r.buf))}
	var err error
	if m.raddr, m.rkey, m.sreq, err = ep.rndvSender(r, ep.w.cfg.RndvScheme == RndvGet); err != nil {
		return err
	}
	r.hdr = m.encode(r.hdr)
	return ep.rndvAnnounce(r, amRTS)
}

// TagRecv posts a receive for a message whose tag matches tag under mask
// ((msgTag ^ tag) & mask == 0). The request's Info gives the message's
// length, tag and sender. A message longer than buf completes with a
// *TruncatedError (matching uct.ErrMessageTruncated).
func (w *Worker) TagRecv(buf []byte, tag, mask uint64, p *Params) *Request {
	w.lock()
	r := w.getReq(kTagRecv, nil, p)
	r.buf = buf
	r.mr.Tag, r.mr.Mask = tag, mask
	if msg := w.m.PostRecv(&r.mr); msg != nil {
		w.deliver(r, msg.Data.(*unexp))
	} else if w.m.AnyDown() {
		switch n, s := w.m.CheckPosted(&r.mr); n {
		case match.NoticeFailedPending:
			r.notice = ErrProcFailedPending
		case match.NoticePeerFailed:
			w.complete(r, w.srcFailed(s))
		}
	}
	w.unlock()
	return r
}

// srcFailed is the status of a receive that only a failed or purged
// source could have matched.
func (w *Worker) srcFailed(s match.Src) error {
	if ep := w.epByID(uint32(s)); ep != nil && ep.err != nil {
		return opErr("tag_recv", ep.name, ep.err)
	}
	if err := w.goneErr[s]; err != nil {
		return err
	}
	return opErr("tag_recv", "", uct.ErrPeerFailed)
}

// Message is an unexpected message taken out of matching by
// TagProbeRemove; TagRecvMessage receives it.
type Message struct {
	u    *unexp
	Info Info
}

// TagProbe reports whether an unexpected message matches tag/mask, and
// what is known of it, leaving it to be matched by a receive (MPI_Iprobe).
// While matching is suspended it finds nothing.
func (w *Worker) TagProbe(tag, mask uint64) (Info, bool) {
	m, ok := w.probe(tag, mask, false)
	if !ok {
		return Info{}, false
	}
	return m.Info, true
}

// TagProbeRemove takes the first unexpected message matching tag/mask out
// of matching (MPI_Improbe); receive it with TagRecvMessage. While
// matching is suspended it finds nothing.
func (w *Worker) TagProbeRemove(tag, mask uint64) (*Message, bool) {
	return w.probe(tag, mask, true)
}

func (w *Worker) probe(tag, mask uint64, remove bool) (*Message, bool) {
	w.lock()
	defer w.unlock()
	msg := w.m.Probe(tag, mask, remove)
	if msg == nil {
		return nil, false
	}
	u := msg.Data.(*unexp)
	info := Info{Length: len(u.data), Tag: msg.Tag, Sender: u.ep}
	if u.isRndv {
		info.Length = int(u.rts.length)
	}
	m := &Message{Info: info}
	if remove {
		m.u = u
	}
	return m, true
}

// TagRecvMessage receives a message taken by TagProbeRemove.
func (w *Worker) TagRecvMessage(buf []byte, m *Message, p *Params) *Request {
	w.lock()
	defer w.unlock()
	r := w.getReq(kTagRecv, nil, p)
	r.buf = buf
	if m == nil || m.u == nil {
		w.complete(r, opErr("tag_recv", "", uct.ErrInvalidParam))
		return r
	}
	u := m.u
	m.u = nil
	w.deliver(r, u)
	return r
}

// deliver completes (or starts the rendezvous of) r with u (lock held).
func (w *Worker) deliver(r *Request, u *unexp) {
	if u.isRndv {
		w.rndvMatched(r, u.ep, &u.rts)
	} else {
		w.deliverEager(r, u.ep, u.m.Tag, u.data)
	}
	w.freeUnexp(u)
}

func (w *Worker) deliverEager(r *Request, ep *Endpoint, tag uint64, data []byte) {
	copy(r.buf, data)
	r.info = Info{Length: len(data), Tag: tag, Sender: ep}
	if len(data) > len(r.buf) {
		w.complete(r, opErr("tag_recv", ep.name, &TruncatedError{Length: len(data), Buffer: len(r.buf)}))
		return
	}
	if !w.doneInPlace(r) {
		w.complete(r, nil)
	}
}

// onEager handles an eager tag message (inside iface Progress).
func (w *Worker) onEager(_ any, data []byte, _ uct.AMFlags) {
	tag, dst, payload, err := decodeEager(data)
	if err != nil {
		return
	}
	w.lockCB()
	w.eagerArrive(w.epByID(dst), tag, payload)
	w.unlockCB()
}

// eagerArrive matches an eager tag message from ep (nil: closed) or
// queues it as unexpected (lock held).
func (w *Worker) eagerArrive(ep *Endpoint, tag uint64, payload []byte) {
	if ep == nil {
		w.stats.ClosedDrops++
		return
	}
	if ep.err != nil {
		w.stats.FailedDrops.TagEager++
		return
	}
	if mr := w.m.TakeRecv(tag); mr != nil {
		w.deliverEager(mr.Data.(*Request), ep, tag, payload)
		return
	}
	u := w.getUnexp()
	u.m.Src, u.m.Tag, u.ep = match.Src(ep.id), tag, ep
	u.data = append(u.data[:0], payload...)
	w.m.Queue(&u.m)
}

// onRTS handles a rendezvous announcement.
func (w *Worker) onRTS(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeRTS(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil {
		w.stats.ClosedDrops++
		return
	}
	if ep.err != nil {
		w.stats.FailedDrops.TagRndv++
		return
	}
	u := w.getUnexp()
	u.m.Src, u.m.Tag, u.ep, u.isRndv = match.Src(ep.id), m.tag, ep, true
	if mr := w.m.Arrive(&u.m); mr != nil {
		w.rndvMatched(mr.Data.(*Request), ep, &m)
		w.freeUnexp(u)
		return
	}
	u.rkeyBuf = append(u.rkeyBuf[:0], m.rkey...)
	u.rts = m
	u.rts.rkey = u.rkeyBuf
}

// rndvMatched starts fetching (GET) or asks for (RTR) the data of a
// matched rendezvous send (lock held).
func (w *Worker) rndvMatched(r *Request, ep *Endpoint, m *rts) {
	r.deep = true
	r.info = Info{Length: int(m.length), Tag: m.tag, Sender: ep}
	r.rndvLen = int(m.length)
	r.rndvSrc = ep
	r.ep = ep
	if ep.closed {
		w.complete(r, opErr("tag_recv", ep.name, uct.ErrCanceled))
		return
	}
	if ep.err != nil {
		w.complete(r, ep.fail("tag_recv"))
		return
	}
	n := min(len(r.buf), int(m.length))
	ln := &ep.lanes[ep.rmaLane]
	if len(m.rkey) == 0 { // RndvPut: send a ready-to-receive
		q := rtr{dst: ep.rid, sreq: m.sreq, length: uint64(n)}
		if n > 0 {
			e, err := w.regs.get(ep, ln.wi, r.buf[:n], uct.AccessRemoteWrite)
			if err != nil {
				w.complete(r, opErr("tag_recv", ep.name, err))
				ep.ctl(amATS, (&ack{dst: ep.rid, req: m.sreq, status: uint8(uct.StatusOf(err))}).encode)
				return
			}
			r.reg = e
			q.raddr = e.mem.Address()
			if q.rkey, err = ep.seqBundle(r, e, r.buf[:n], uct.AccessRemoteWrite); err != nil {
				w.complete(r, opErr("tag_recv", ep.name, err))
				ep.ctl(amATS, (&ack{dst: ep.rid, req: m.sreq, status: uint8(uct.StatusOf(err))}).encode)
				return
			}
		}
		r.slot = w.slotAlloc(r)
		q.rreq = r.slot
		ep.inflight.push(r)
		ep.ctl(amRTR, q.encode)
		return
	}
	r.peerReq = m.sreq
	w.rndvMove(r, ep, false, r.buf[:n], m.raddr, m.rkey)
}
