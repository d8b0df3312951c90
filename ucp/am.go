package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// AMSend sends an active message with a user header and data to the
// handler installed for id on the peer worker; the handler gets this
// endpoint's peer-side endpoint as its reply endpoint. header and data
// must stay untouched until the request completes. A message whose
// header and data fit one AM fragment of the lane (MaxAM) goes in one
// fragment; a larger one goes eager in fragments below the rendezvous
// threshold (Config.RndvThresh) and by rendezvous from it (see
// AMMessage.RecvData). The header must fit one fragment. As TagSend, it
// returns nil when a one-fragment message was sent inside the call
// (ucp_am_send_nbx returning NULL) and p asks for no request.
func (ep *Endpoint) AMSend(id uint16, header, data []byte, p *Params) *Request {
	w := ep.w
	w.lock()
	defer w.unlock()
	var err error
	tried := false
	if p.noRequest() {
		if tried, err = ep.amSendNow(id, header, data); tried && err == nil {
			return nil
		}
	}
	r := w.getReq(kAMSend, ep, p)
	r.amID, r.amHdr, r.buf = id, header, data
	r.info.Length = len(data)
	if tried {
		ep.postFailed(r, err)
	} else {
		ep.post(r)
	}
	return r
}

// MaxAM returns the largest header+data an AMSend carries in one
// fragment.
func (ep *Endpoint) MaxAM() int {
	ep.w.lock()
	defer ep.w.unlock()
	if ep.amLane < 0 || ep.lanes == nil {
		return 0
	}
	return ep.amMaxBcopy() - userHdr
}

func (ep *Endpoint) sendAM(r *Request) error {
	if userHdr+len(r.amHdr)+len(r.buf) > ep.amMaxBcopy() || len(r.amHdr) > 0xffff {
		return ep.sendAMLarge(r)
	}
	h := append(r.hdr[:0], make([]byte, userHdr)...)
	putUserHdr(h, ep.rid, r.amID, len(r.amHdr))
	h = append(h, r.amHdr...)
	r.hdr = h
	if err := ep.amSend(amUser, h, r.buf); err != nil {
		return err
	}
	ep.w.complete(r, nil)
	return nil
}

// amMaxEager is the largest active message sent eager in fragments (the
// receiver allocates its assembly buffer from the first fragment).
const amMaxEager = 1 << 32

// amRndvMin returns the size from which active messages that do not fit
// one fragment use rendezvous.
func (ep *Endpoint) amRndvMin() int {
	if ep.rmaLane < 0 {
		return ThreshInf
	}
	if t := ep.w.cfg.RndvThresh; t > 0 {
		return t
	}
	return ep.bcopyMax + 1
}

// sendAMLarge sends an active message that does not fit one fragment
// (lock held). A message whose fragments started stays in fragments
// across back-pressure retries (r.tag is its message id).
func (ep *Endpoint) sendAMLarge(r *Request) error {
	max := ep.amMaxBcopy()
	if len(r.amHdr) > 0xffff || len(r.amHdr) >= max-userFragHdr {
		return fmt.Errorf("active message header of %d bytes > %d: %w", len(r.amHdr), max-userFragHdr-1, uct.ErrInvalidParam)
	}
	if r.tag == 0 && len(r.buf) >= ep.amRndvMin() && userRTSFixed+len(r.amHdr)+maxRKeyBundle <= max {
		return ep.sendAMRTS(r)
	}
	if uint64(len(r.buf)) > amMaxEager {
		return fmt.Errorf("active message of %d bytes > %d without rendezvous: %w", len(r.buf), uint64(amMaxEager), uct.ErrInvalidParam)
	}
	return ep.sendAMFrags(r)
}

// maxRKeyBundle bounds the packed key of a rendezvous buffer.
const maxRKeyBundle = 256

// sendAMFrags sends the fragments of r from r.amOff on (lock held). The
// AM lane is ordered and r stays at the head of the endpoint's queue on
// back-pressure, so the fragments of one message arrive in order.
func (ep *Endpoint) sendAMFrags(r *Request) error {
	if r.tag == 0 {
		ep.w.amSeq++
		r.tag = ep.w.amSeq
	}
	return ep.sendFrags(r, amUserFrag, userFrag{dst: ep.rid, id: r.amID, mid: r.tag}, r.amHdr)
}

// sendFrags sends r.buf from r.amOff on as fragments of message f (its
// dst, id and mid set) in AMs of id, hdr in the first, and completes r
// once the last is sent (lock held). On an error r.amOff says where the
// retry goes on.
func (ep *Endpoint) sendFrags(r *Request, id uint8, f userFrag, hdr []byte) error {
	f.total = uint64(len(r.buf))
	for {
		off := r.amOff
		f.off, f.hdr = uint64(off), nil
		room := ep.amMaxBcopy() - userFragHdr
		if off == 0 {
			f.hdr = hdr
			room -= len(hdr)
		}
		r.hdr = f.encode(r.hdr[:0])
		end := min(off+room, len(r.buf))
		if end < len(r.buf) {
			end = off + ep.fragAlign(len(r.hdr), end-off)
		}
		if err := ep.amSend(id, r.hdr, r.buf[off:end]); err != nil {
			return err
		}
		r.amOff = end
		if end == len(r.buf) {
			break
		}
	}
	ep.w.complete(r, nil)
	return nil
}

// sendAMRTS announces a rendezvous active message (lock held); the
// receiver's ATS completes r.
func (ep *Endpoint) sendAMRTS(r *Request) error {
	m := userRTS{dst: ep.rid, id: r.amID, length: uint64(len(r.buf)), hdr: r.amHdr}
	var err error
	if m.raddr, m.rkey, m.sreq, err = ep.rndvSender(r, true); err != nil {
		return err
	}
	r.hdr = m.encode(r.hdr)
	return ep.rndvAnnounce(r, amUserRTS)
}

// onUser runs the user's handler for an active message.
func (w *Worker) onUser(_ any, data []byte, _ uct.AMFlags) {
	dst, id, hdr, payload, err := decodeUser(data)
	if err != nil {
		return
	}
	w.lockCB()
	ep := w.epByID(dst)
	h := w.am[id]
	if ep == nil || ep.err != nil {
		if ep == nil {
			w.stats.ClosedDrops++
		} else {
			w.stats.FailedDrops.AM++
		}
		w.unlockCB()
		return
	}
	if h == nil {
		w.stats.AMNoHandler++
		w.unlockCB()
		return
	}
	w.unlockCB()
	m := w.eagerMsg()
	m.ID, m.Header, m.Data, m.Reply, m.Length = id, hdr, payload, ep, len(payload)
	h(m)
	w.eagerMsgDone(m)
}

// eagerMsg returns the message given to the handler of an eager active
// message. Handlers run inside the transports' progress, which one
// goroutine at a time runs (the holder of the transport lock in a
// thread-safe worker) and which a handler cannot reenter, so one call at
// a time uses the worker's message; a handler that keeps its message
// (Keep) takes it, and the next call gets a new one.
func (w *Worker) eagerMsg() *AMMessage {
	m := w.amMsg
	if m == nil {
		m = new(AMMessage)
		w.amMsg = m
	}
	return m
}

// eagerMsgDone takes m back after its handler returned, unless it was
// kept.
func (w *Worker) eagerMsgDone(m *AMMessage) {
	if m.kept {
		w.amMsg = nil
		return
	}
	*m = AMMessage{}
}

// amState is what the worker keeps in an AMMessage.
type amState struct {
	state uint8 // amEager...
	owned bool  // Data is the worker's assembly buffer
	kept  bool  // the handler kept Data
	sreq  uint64
	raddr uint64
	rkey  []byte
}

const (
	amEagerData = iota // data in Data
	amRndvNew          // rendezvous, inside the handler
	amRndvKept         // rendezvous kept by the handler
	amRndvDone         // rendezvous received or released
)

// onUserRTS runs the handler for a rendezvous active message. If the
// handler neither receives the data nor keeps the message, the data is
// dropped and the sender completes.
func (w *Worker) onUserRTS(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeUserRTS(data)
	if err != nil {
		return
	}
	w.lockCB()
	ep := w.epByID(m.dst)
	if ep == nil {
		w.stats.ClosedDrops++
		w.unlockCB()
		return
	}
	if ep.err != nil {
		w.stats.FailedDrops.AMRndv++
		w.unlockCB()
		return
	}
	h := w.am[m.id]
	if h == nil {
		w.stats.AMNoHandler++
		ep.ctl(amATS, (&ack{dst: ep.rid, req: m.sreq, status: uint8(uct.ErrUnsupported)}).encode)
		w.unlockCB()
		return
	}
	w.unlockCB()
	msg := &AMMessage{ID: m.id, Header: m.hdr, Reply: ep, Length: int(m.length), Rndv: true}
	msg.state, msg.sreq, msg.raddr, msg.rkey = amRndvNew, m.sreq, m.raddr, m.rkey
	h(msg)
	w.lockCB()
	if msg.state == amRndvNew {
		msg.state = amRndvDone
		ep.ctl(amATS, (&ack{dst: ep.rid, req: m.sreq}).encode)
	}
	w.unlockCB()
}

// Keep, called inside the handler, keeps the message beyond it (UCX's
// returning UCS_INPROGRESS). For eager data it returns the data, which
// then belongs to the caller: data assembled from fragments is handed
// over as is, data of one fragment (in the transport's receive buffer)
// is copied. A kept rendezvous message (Keep returns nil) may be received
// with RecvData after the handler returned, or dropped with Release.
func (m *AMMessage) Keep() []byte {
	if !m.Rndv {
		if !m.owned {
			m.Data = append([]byte(nil), m.Data...)
			m.owned = true
		}
		m.kept = true
		return m.Data
	}
	w := m.Reply.w
	w.lock()
	defer w.unlock()
	if m.state == amRndvNew {
		m.state = amRndvKept
		m.rkey = append([]byte(nil), m.rkey...)
	}
	return nil
}

// Release drops a kept rendezvous message without receiving its data;
// the sender completes successfully. For eager data it does nothing (the
// garbage collector frees kept data).
func (m *AMMessage) Release() {
	if !m.Rndv {
		return
	}
	ep := m.Reply
	w := ep.w
	w.lock()
	defer w.unlock()
	if m.state == amRndvKept {
		m.state = amRndvDone
		ep.ctl(amATS, (&ack{dst: ep.rid, req: m.sreq}).encode)
	}
}

// RecvData receives the message's data into buf (ucp_am_recv_data_nbx).
// For a rendezvous message it fetches the data from the sender's buffer
// (inside the handler, or after it kept the message); the request
// completes when the data is in buf, or with the failure of the transfer
// or of the endpoint, and the sender's request completes with it. For
// eager data, valid inside the handler or once kept, it copies. A buffer
// shorter than the data completes the request with a *TruncatedError and
// nothing is received; a rendezvous message can be received once.
func (m *AMMessage) RecvData(buf []byte, p *Params) *Request {
	ep := m.Reply
	w := ep.w
	w.lock()
	defer w.unlock()
	r := w.getReq(kAMRecv, ep, p)
	r.info = Info{Length: m.Length, Sender: ep}
	if len(buf) < m.Length {
		if m.Rndv && (m.state == amRndvNew || m.state == amRndvKept) {
			m.state = amRndvDone
			ep.ctl(amATS, (&ack{dst: ep.rid, req: m.sreq, status: uint8(uct.ErrMessageTruncated)}).encode)
		}
		w.complete(r, opErr("am_recv_data", ep.name, &TruncatedError{Length: m.Length, Buffer: len(buf)}))
		return r
	}
	if !m.Rndv {
		copy(buf, m.Data)
		w.complete(r, nil)
		return r
	}
	if m.state != amRndvNew && m.state != amRndvKept {
		w.complete(r, opErr("am_recv_data", ep.name, fmt.Errorf("rendezvous data already received or released: %w", uct.ErrInvalidParam)))
		return r
	}
	m.state = amRndvDone
	switch {
	case ep.closed:
		w.complete(r, opErr("am_recv_data", ep.name, uct.ErrCanceled))
		return r
	case ep.err != nil:
		w.complete(r, ep.fail("am_recv_data"))
		return r
	}
	r.buf = buf[:m.Length]
	r.rndvSrc, r.rndvLen, r.peerReq = ep, m.Length, m.sreq
	w.rndvMove(r, ep, false, r.buf, m.raddr, m.rkey)
	return r
}
