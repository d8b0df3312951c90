package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

// Placing expected tag messages in fragments. When the first fragment of
// an eager tag message in fragments arrives and a posted receive matches
// its tag, the message is matched at once and every fragment is copied
// from the transport's receive buffer straight into the receive's
// buffer at its offset: no assembly buffer, one copy instead of two. The
// sender sends one message's fragments in order and the messages of one
// endpoint one after the other on one ordered lane, so every earlier
// message from that endpoint has arrived and been matched or queued
// when the first fragment does: matching at the first fragment keeps
// the order of matches that matching at the last kept.
//
// The placement is held with the partial active messages (amFrags, by
// sender and message id) but takes no assembly memory and is not
// charged to the reassembly limits; its announced length is still held
// to the per-peer limit, as an assembly's is, so a message that could
// not be assembled is not placed either (the assembly path drops and
// reports it). A fragment is placed only if it continues the message:
// its offset is the bytes placed so far, its total the announced one,
// and it ends within the announced length; a message longer than the
// buffer is written up to the buffer's end and its receive completes,
// once the last fragment arrived, with a *TruncatedError, as an
// assembled one does. A fragment that does not continue its message
// (out of order, another total, too long, or an active message's
// fragment naming its id) ends the message: its receive completes with
// an error matching uct.ErrDataCorrupt. When the sender's endpoint fails
// or is closed the receive completes with the endpoint's error
// (dropAMFrags; uct.ErrCanceled for a close). Each of these ends takes
// the placement out of amFrags in the same step as it completes the
// receive, so no later fragment finds the request (which its owner may
// have released and reused). A matched receive is not posted any more:
// Cancel does not take it back, as for a rendezvous receive under way.
//
// Between two processes over lo (perftest at real-time priority, rc,
// alternated with assembling every message, 24 paired rounds), the
// per-round ratio of tag_lat was 0.95 at 16 KiB and 0.94 at 32 KiB
// (lower in 19 and 21 rounds of 24), and tag_bw moved by +4% and +7%,
// within its spread; the receive path is small beside the system calls
// of the rc provider.

// tagPlace is an expected tag message whose fragments are being placed
// into its receive's buffer.
type tagPlace struct {
	f     match.Frag
	r     *Request
	ep    *Endpoint
	tag   uint64
	total uint64
	got   uint64 // bytes placed so far: the next fragment's offset
}

// placeFreeMax bounds the placements kept for reuse.
const placeFreeMax = 16

// onTagFrag places a fragment of an eager tag message into its receive's
// buffer (placeFrag), or adds it to its message and matches the message
// once it is complete.
func (w *Worker) onTagFrag(_ any, data []byte, _ uct.AMFlags) {
	ep, m, ok := w.fragFrom(data, 8, &w.stats.FailedDrops.TagEager)
	if !ok {
		return
	}
	if w.placeFrag(ep, &m) {
		w.unlockCB()
		return
	}
	a := w.fragAdd(ep, &m, "tag message")
	if a == nil {
		return
	}
	w.eagerArrive(ep, le.Uint64(a.hdr), a.buf) // copies a.buf
	w.putAMBuf(a.buf)
	w.unlockCB()
}

// placeFrag places fragment m from ep if its message is, or with this
// first fragment becomes, an expected one, and reports whether it took
// the fragment; otherwise the fragment is for the assembly path (lock
// held).
func (w *Worker) placeFrag(ep *Endpoint, m *userFrag) bool {
	src := match.Src(ep.id)
	f := w.amFrags.Get(src, m.mid)
	var p *tagPlace
	if m.off == 0 {
		if f != nil {
			return false // the id is in use: addFrag drops the fragment
		}
		if _, pmax := w.reasmLimits(); m.total > uint64(pmax) || uint64(len(m.data)) > m.total {
			return false // addFrag fails (and reports) or drops it
		}
		tag := le.Uint64(m.hdr)
		mr := w.m.TakeRecv(tag)
		if mr == nil {
			return false
		}
		p = w.getPlace()
		p.r, p.ep, p.tag, p.total, p.got = mr.Data.(*Request), ep, tag, m.total, 0
		p.r.info = Info{Length: int(m.total), Tag: tag, Sender: ep}
		p.f = match.Frag{Src: src, ID: m.mid, Data: p}
		w.amFrags.Add(&p.f) // cannot fail: the id is free
	} else {
		if f == nil {
			return false
		}
		var ok bool
		if p, ok = f.Data.(*tagPlace); !ok {
			return false
		}
	}
	n := uint64(len(m.data))
	if m.off != p.got || m.total != p.total || n > p.total-p.got {
		w.fragLost(&p.f)
		return true
	}
	if buf := p.r.buf; p.got < uint64(len(buf)) {
		copy(buf[p.got:], m.data)
	}
	p.got += n
	if p.got == p.total {
		w.placeDone(p)
	}
	return true
}

// placeDone completes the receive of p, all of whose bytes arrived (lock
// held).
func (w *Worker) placeDone(p *tagPlace) {
	r := p.r
	var err error
	if p.total > uint64(len(r.buf)) {
		err = opErr("tag_recv", p.ep.name, &TruncatedError{Length: int(p.total), Buffer: len(r.buf)})
	}
	w.placeEnd(p, err)
}

// placeEnd takes p out of the partial messages, completes its receive
// with err and keeps p for reuse (lock held).
func (w *Worker) placeEnd(p *tagPlace, err error) {
	w.amFrags.Remove(&p.f)
	w.complete(p.r, err)
	*p = tagPlace{}
	if len(w.placeFree) < placeFreeMax {
		w.placeFree = append(w.placeFree, p)
	}
}

// getPlace returns an unused placement (lock held).
func (w *Worker) getPlace() *tagPlace {
	if n := len(w.placeFree); n > 0 {
		p := w.placeFree[n-1]
		w.placeFree = w.placeFree[:n-1]
		return p
	}
	return &tagPlace{}
}

// errPlaceLost is the cause of a placed message ended by a fragment that
// did not continue it.
func errPlaceLost(p *tagPlace) error {
	return fmt.Errorf("tag message of %d bytes: fragment out of order at %d: %w", p.total, p.got, uct.ErrDataCorrupt)
}
