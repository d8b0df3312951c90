package ucp

// fragAlign returns how many of the n data bytes a fragment that is not
// a message's last carries after its hdrLen bytes of header: n, cut down
// so that the fragment's length on the AM lane is one the lane sends in
// packets of one size (uct.IfaceAttr.AMBcopyAlign) where it gives one
// (lock held). The fragments of one message then leave together (on rc
// in one GSO datagram instead of one or two per fragment) and the
// receiver takes them with one receive. With failover on, the sequenced
// header that amSend adds counts too.
func (ep *Endpoint) fragAlign(hdrLen, n int) int {
	at := &ep.lanes[ep.amLane].attr
	a := at.AMBcopyAlign
	if a <= 0 {
		return n
	}
	over := hdrLen
	if ep.fo != nil {
		over += seqHdr
	}
	total := (over+n+at.AMBcopyAlignLess)/a*a - at.AMBcopyAlignLess
	if total <= over {
		return n
	}
	return total - over
}
