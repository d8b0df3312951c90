package ucp

import "github.com/ucgo/ucgo/uct"

// Sends that complete inside the call return no request, as UCX's
// ucp_tag_send_nbx returns NULL for a message it sent at once: an eager
// message the lane took (short or bcopy, or logged in the sequenced
// channel when failover is on, whose replay log keeps it until the peer
// acknowledges it) is done, and a request would only be taken from the
// pool, completed and released. The caller asks for a request by giving
// Params with a Callback or UserData.

// noRequest says whether an operation started with p needs no request
// when it completes inside the call.
func (p *Params) noRequest() bool { return p == nil || p.Callback == nil && p.UserData == nil }

// canSendNow says whether a new operation of ep may go to its lane at
// once, as post decides (lock held): the endpoint is healthy and wired
// up, nothing is queued before it and this goroutine may post.
func (ep *Endpoint) canSendNow() bool {
	return ep.err == nil && !ep.closed && ep.ridKnown && ep.queue.empty() && ep.stalled.empty() && ep.w.canPost()
}

// tagSendNow sends an eager tag message that completes at once (lock
// held). tried is false when the message needs a request (zero copy,
// rendezvous, a size no protocol takes) or cannot go now (see
// canSendNow); otherwise err is the send's status, nil when it was sent.
func (ep *Endpoint) tagSendNow(buf []byte, tag uint64) (tried bool, err error) {
	n := len(buf)
	if n >= ep.rndvMin || ep.fo == nil && n > ep.shortMax && (n >= ep.zcopyMin || n > ep.bcopyMax) {
		return false, nil
	}
	if !ep.canSendNow() {
		return false, nil
	}
	switch {
	case ep.fo != nil:
		return true, ep.seqTag(buf, tag)
	case n <= ep.shortMax:
		return true, ep.tagShort(buf, tag)
	}
	return true, ep.tagBcopy(buf, tag)
}

// amSendNow sends an active message that fits one fragment and completes
// at once (lock held); tried and err as for tagSendNow.
func (ep *Endpoint) amSendNow(id uint16, header, data []byte) (tried bool, err error) {
	if userHdr+len(header) > len(ep.scratch) || !ep.canSendNow() ||
		userHdr+len(header)+len(data) > ep.amMaxBcopy() {
		return false, nil
	}
	h := ep.scratch[:userHdr+len(header)]
	putUserHdr(h, ep.rid, id, len(header))
	copy(h[userHdr:], header)
	return true, ep.amSend(amUser, h, data)
}

// putNow writes buf to the peer's memory at raddr with one short put
// that completes at once (lock held), as ucp_put_nbx does for a put that
// fits the lane's short limit: the buffer may be reused on return, and
// Flush, as for any put, tells when the data is in the peer's memory. It
// reports false when it did not write it: failover on (a put is replayed
// from its request), no short put on the RMA lane, a key without this
// lane, the endpoint not ready (canSendNow) or any error from the lane;
// the caller then takes the request path, which writes it (again: the
// same bytes) and reports what fails.
func (ep *Endpoint) putNow(buf []byte, raddr uint64, rkey *RKey) bool {
	if ep.fo != nil || rkey == nil || !ep.canSendNow() {
		return false
	}
	i := ep.rmaLane
	if i < 0 || i >= len(rkey.keys) || rkey.keys[i] == nil {
		return false
	}
	ln := &ep.lanes[i]
	if len(buf) > ln.attr.PutMaxShort || !ln.attr.Cap.Has(uct.CapPutShort) {
		return false
	}
	return ln.ep.PutShort(buf, raddr, rkey.keys[i]) == nil
}

// tagShort sends an eager tag message as one short AM (lock held).
func (ep *Endpoint) tagShort(buf []byte, tag uint64) error {
	b := ep.scratch[:4+len(buf)]
	le.PutUint32(b, ep.rid)
	copy(b[4:], buf)
	return ep.lanes[ep.amLane].ep.AMShort(amEager, tag, b)
}

// tagBcopy sends an eager tag message as one bcopy AM (lock held).
func (ep *Endpoint) tagBcopy(buf []byte, tag uint64) error {
	hdr := ep.scratch[:eagerHdr]
	putEagerHdr(hdr, tag, ep.rid)
	_, err := ep.lanes[ep.amLane].ep.AMBcopy(amEager, hdr, buf)
	return err
}

// postFailed gives a new request r whose immediate send failed with err
// the fate post and dispatch give it (lock held): back-pressure queues
// it, any other error completes it (and reports a broken lane).
func (ep *Endpoint) postFailed(r *Request, err error) {
	w := ep.w
	if retryLater(err) {
		ep.queue.push(r)
		w.toBacklog(ep)
		return
	}
	w.complete(r, opErr(kindOp[r.kind], ep.name, err))
	if uct.StatusOf(err).IsEndpointFatal() {
		w.laneFault(ep, ep.opLane(r), err)
	}
}
