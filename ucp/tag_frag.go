package ucp

import (
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Eager tag messages in fragments. On a lane whose eager sends copy (no
// AM zero-copy) and whose latency is a network's, a rendezvous costs two
// one-way trips more than an eager send (the RTS, then the receiver's
// GET request before the data): over rc on one host each is a system
// call on both sides and a pass of the peer's engine. So, with the
// rendezvous threshold left to its default (RndvThresh 0), tag messages
// larger than one fragment and up to tagFragAuto go eager in fragments
// of the AM lane's bcopy size (amTagFrag, the encoding of amUserFrag
// with the tag as its header). A message whose first fragment finds a
// posted receive is matched then and its fragments are placed straight
// into the receive's buffer (tag_frag_place.go); one that arrives
// unexpected is reassembled as active messages are (addFrag, bounded by
// the same limits) and then matched as one eager message. Every fragment
// is a message of its own on the lane (its completion, its copies on
// the receiver), while a rendezvous GET moves the data in one READ, so
// the fragments win only while they are few. Fragments cut to whole
// packets (fragAlign) leave together in GSO datagrams of up to 15
// packets of 4 KiB. Between two processes over lo (perftest at
// real-time priority, alternated with the rendezvous, 8 KiB fragments):
// 16 KiB tag_lat took about half the time eager; 32 KiB tag_lat took
// 0.55-0.82 of it (six rounds) and its tag_bw rose by 1.06-1.47 (eight
// rounds); 64 KiB tag_lat took 0.84-0.98 of it but its tag_bw went
// either way (0.72-1.19, six rounds), so 64 KiB keeps to the
// rendezvous. rc's fragments carry 16 KiB, so a 16 KiB message is one
// fragment there. With failover on, tag messages above one fragment
// keep to rendezvous.

// amTagFrag carries one fragment of an eager tag message (see
// amUserFrag; the header, at offset 0 only, is the tag u64).
const amTagFrag = 26

// tagFragAuto is the largest tag message sent eager in fragments by
// default, on lanes that qualify (tagFragLane).
const tagFragAuto = 32 << 10

// tagFragLatency is the lane latency from which a lane counts as a
// network's for tagFragLane.
const tagFragLatency = time.Microsecond

// tagFragMaxFor returns the largest tag message ep sends eager in
// fragments over an AM lane with attributes at; at most one fragment
// (ep.bcopyMax) where fragments are not used (lock held).
func (ep *Endpoint) tagFragMaxFor(at *uct.IfaceAttr) int {
	if ep.w.cfg.RndvThresh != 0 || ep.rmaLane < 0 || !tagFragLane(at) {
		return ep.bcopyMax
	}
	return max(ep.bcopyMax, tagFragAuto)
}

// tagFragLane reports whether a lane sends tag messages of a few
// fragments faster eager than by rendezvous: its eager zero-copy copies
// anyway (or it has none) and its latency is a network's.
func tagFragLane(at *uct.IfaceAttr) bool {
	zc := at.Cap.Has(uct.CapAMZcopy) && at.AMZcopyMin <= at.AMMaxZcopy
	return !zc && at.Latency >= tagFragLatency && at.AMMaxBcopy > userFragHdr+8
}

// sendTagFrags sends r's fragments from r.amOff on (lock held). The AM
// lane is ordered and r stays at the head of the endpoint's queue on
// back-pressure, so the fragments of one message arrive in order and a
// retry goes on with the same message id (r.fragMid).
func (ep *Endpoint) sendTagFrags(r *Request) error {
	r.deep = true // amOff and fragMid are cleared when r is put back
	if r.fragMid == 0 {
		ep.w.amSeq++
		r.fragMid = ep.w.amSeq
	}
	var tag [8]byte
	le.PutUint64(tag[:], r.tag)
	// failover is off (sendTag): amSend is the AM lane's AMBcopy
	return ep.sendFrags(r, amTagFrag, userFrag{dst: ep.rid, mid: r.fragMid}, tag[:])
}
