package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// AMSend sends an active message with a user header and data to the
// handler installed for id on the peer worker; the handler gets this
// endpoint's peer-side endpoint as its reply endpoint. header and data
// must stay untouched until the request completes; together they must fit
// one AM fragment of the lane (MaxAM).
func (ep *Endpoint) AMSend(id uint16, header, data []byte, p *Params) *Request {
	w := ep.w
	w.lock()
	defer w.unlock()
	r := w.getReq(kAMSend, ep, p)
	r.amID, r.amHdr, r.buf = id, header, data
	r.info.Length = len(data)
	ep.post(r)
	return r
}

// MaxAM returns the largest header+data an AMSend can carry.
func (ep *Endpoint) MaxAM() int {
	ep.w.lock()
	defer ep.w.unlock()
	if ep.amLane < 0 || ep.lanes == nil {
		return 0
	}
	return ep.lanes[ep.amLane].attr.AMMaxBcopy - userHdr
}

func (ep *Endpoint) sendAM(r *Request) error {
	ln := &ep.lanes[ep.amLane]
	if userHdr+len(r.amHdr)+len(r.buf) > ln.attr.AMMaxBcopy || len(r.amHdr) > 0xffff {
		return fmt.Errorf("active message of %d bytes > %d: %w", len(r.amHdr)+len(r.buf), ln.attr.AMMaxBcopy-userHdr, uct.ErrInvalidParam)
	}
	h := append(r.hdr[:0], make([]byte, userHdr)...)
	putUserHdr(h, ep.rid, r.amID, len(r.amHdr))
	h = append(h, r.amHdr...)
	r.hdr = h
	if _, err := ln.ep.AMBcopy(amUser, h, r.buf); err != nil {
		return err
	}
	ep.w.complete(r, nil)
	return nil
}

// onUser runs the user's handler for an active message.
func (w *Worker) onUser(_ any, data []byte, _ uct.AMFlags) {
	dst, id, hdr, payload, err := decodeUser(data)
	if err != nil {
		return
	}
	w.lock()
	ep := w.epByID(dst)
	h := w.am[id]
	if ep == nil || h == nil {
		w.amDropped++
		w.unlock()
		return
	}
	w.unlock()
	m := AMMessage{ID: id, Header: hdr, Data: payload, Reply: ep}
	h(&m)
}
