package ucp

// TagSendSync is TagSend that completes only once the receiver has
// matched the message with a receive (MPI_Ssend, UCX's
// ucp_tag_send_sync_nbx). It always uses the rendezvous protocol, whose
// acknowledgment (ATS, or ATP after the receiver's RTR) is sent after the
// match, whatever the size, so it needs a lane that can get and put;
// without one the request completes with uct.ErrUnsupported.
func (ep *Endpoint) TagSendSync(buf []byte, tag uint64, p *Params) *Request {
	w := ep.w
	w.lock()
	r := w.getReq(kTagSend, ep, p)
	r.buf, r.tag, r.sync = buf, tag, true
	r.info = Info{Length: len(buf), Tag: tag}
	ep.post(r)
	w.unlock()
	return r
}
