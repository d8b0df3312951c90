package ucp

// Rail load. Every part of a striped transfer costs its rail a fixed
// price besides its bytes: a request on the wire (a READ request, the
// first packet of a WRITE), a response with its own header (the first
// and last READ response, an ACK), the datagrams and system calls that
// carry them on each rail's own socket, the completion. On links that
// outrun the CPU that price is what two rails cost more per byte than
// one. It buys nothing when every rail is already busy with transfers
// queued ahead: the rails then run in parallel anyway, whether the next
// transfer is cut in parts or not. So an endpoint counts, per rail, the
// bytes of its transfers in flight there (laneInfo.xbytes: striped
// shares and transfers taken whole), and a transfer that every rail
// already has at least its own size queued ahead of goes whole on the
// least loaded rail, costing what it costs on one lane; otherwise (an
// idle rail, or a lone transfer) it is striped as before, so a single
// transfer still moves over every rail at once.

// wholeRail returns the index in st of the rail that takes a transfer
// of n bytes whole: the least loaded one, when every rail of st has n
// bytes or more in flight; -1 when the transfer is to be striped.
func (ep *Endpoint) wholeRail(st *stripe, n int) int {
	best := -1
	for k := 0; k < st.n; k++ {
		b := ep.lanes[st.lanes[k]].xbytes
		if b < n {
			return -1
		}
		if best < 0 || b < ep.lanes[st.lanes[best]].xbytes {
			best = k
		}
	}
	return best
}

// takeWhole starts r's transfer of buf whole on rail k of st, as on one
// lane, and counts it in the rail's load until r completes (lock held).
func (w *Worker) takeWhole(r *Request, st *stripe, k int, put bool, buf []byte, raddr uint64) {
	li, key := st.lanes[k], st.keys[k]
	if st.ukeys[k] != nil {
		// rendezvous: the peer's bundle, unpacked for this rail, which
		// failover unpacks again for the lane it moves the transfer to
		r.ukey, st.ukeys[k] = st.ukeys[k], nil
	}
	st.release()
	ln := &r.ep.lanes[li]
	ln.wholes++
	ln.xbytes += len(buf)
	r.wlane, r.wbytes = li, len(buf)
	w.startChunks(r, li, put, buf, raddr, key)
}

// load counts the shares of the striped transfer st of n bytes in its
// rails' loads: chunk j (st.chunk bytes, the last one shorter) goes on
// rail j mod st.n (lock held).
func (st *stripe) load(ep *Endpoint, n int) {
	for j, off := 0, 0; off < n; j, off = j+1, off+st.chunk {
		st.acct[j%st.n] += min(st.chunk, n-off)
	}
	for k := 0; k < st.n; k++ {
		ep.lanes[st.lanes[k]].xbytes += st.acct[k]
	}
}

// unload takes what st counted out of its rails' loads (lock held).
func (st *stripe) unload(ep *Endpoint) {
	for k := 0; k < st.n; k++ {
		if st.acct[k] != 0 {
			unloadLane(ep, st.lanes[k], st.acct[k])
			st.acct[k] = 0
		}
	}
}

// railUnload takes r's transfer out of its rails' loads when r completes
// (lock held).
func (w *Worker) railUnload(r *Request) {
	if r.wbytes != 0 {
		unloadLane(r.ep, r.wlane, r.wbytes)
		r.wbytes = 0
	}
	if r.stripe != nil {
		r.stripe.unload(r.ep)
	}
}

// unloadLane takes n bytes out of lane li's load, if ep still has it.
func unloadLane(ep *Endpoint, li, n int) {
	if ep == nil || li < 0 || li >= len(ep.lanes) {
		return
	}
	ln := &ep.lanes[li]
	ln.xbytes = max(0, ln.xbytes-n)
}
