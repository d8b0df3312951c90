package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/ucp/internal/match"
	"github.com/ucgo/ucgo/uct"
)

// Reassembly of active messages, and of eager tag messages, larger than
// one fragment. The first
// fragment announces the message's length, but memory is taken only as
// fragments arrive: the assembly buffer starts small and doubles (up to
// the announced length), and every byte of it is charged to the sending
// endpoint and to the worker. A message whose announced length exceeds
// the per-peer limit, or whose growth would exceed either limit, fails
// alone: its partial data is freed, its later fragments are dropped, the
// worker counts it (WorkerStats.AMReassemblyDrops) and reports a
// DropEvent; the endpoint and its other messages go on. Eager tag
// messages whose first fragment finds a posted receive take no assembly
// buffer: they are placed into the receive's buffer (tag_frag_place.go)
// and held here only by their id.

// Default reassembly limits (Config.AMReassemblyMax, AMReassemblyPeerMax).
const (
	defaultReasmMax     = 1 << 30
	defaultReasmPeerMax = 256 << 20
	// reasmFirst is the first capacity of an assembly buffer larger
	// than the fragment that opened it.
	reasmFirst = 64 << 10
)

// amAsm is an active message being assembled from fragments.
type amAsm struct {
	f       match.Frag
	ep      *Endpoint
	kind    string // fragArrive's kind: the fragments' AM id
	id      uint16
	total   uint64
	hdr     []byte
	buf     []byte // len: bytes received
	charged int    // bytes charged to the endpoint and the worker
}

// reasmLimits returns the worker's and the per-peer limit.
func (w *Worker) reasmLimits() (worker, peer int) {
	worker, peer = w.cfg.AMReassemblyMax, w.cfg.AMReassemblyPeerMax
	if worker <= 0 {
		worker = defaultReasmMax
	}
	if peer <= 0 {
		peer = defaultReasmPeerMax
	}
	return worker, peer
}

// reasmCharge charges n more bytes of a's assembly to its endpoint and
// the worker; false if that would exceed a limit (lock held).
func (w *Worker) reasmCharge(a *amAsm, n int) bool {
	wmax, pmax := w.reasmLimits()
	if w.drops.asmBytes+n > wmax || a.ep.asmBytes+n > pmax {
		return false
	}
	w.drops.asmBytes += n
	a.ep.asmBytes += n
	a.charged += n
	return true
}

// reasmRelease returns a's charge (lock held).
func (w *Worker) reasmRelease(a *amAsm) {
	w.drops.asmBytes -= a.charged
	a.ep.asmBytes -= a.charged
	a.charged = 0
}

// reasmGrow makes room for n more bytes in a's buffer (lock held).
func (w *Worker) reasmGrow(a *amAsm, n int) bool {
	need := len(a.buf) + n
	if need <= cap(a.buf) {
		return true
	}
	c := min(max(2*cap(a.buf), need, reasmFirst), int(a.total))
	if !w.reasmCharge(a, c-a.charged) {
		return false
	}
	if len(a.buf) == 0 {
		a.buf = w.getAMBuf(c)[:0]
		return true
	}
	b := make([]byte, len(a.buf), c)
	copy(b, a.buf)
	a.buf = b
	return true
}

// onUserFrag adds a fragment to its message and runs the handler when
// the message is complete.
func (w *Worker) onUserFrag(_ any, data []byte, _ uct.AMFlags) {
	ep, a := w.fragArrive(data, "active message", -1, &w.stats.FailedDrops.AMFrag)
	if a == nil {
		return
	}
	h := w.am[a.id]
	if h == nil {
		w.stats.AMNoHandler++
		w.putAMBuf(a.buf)
		w.unlockCB()
		return
	}
	w.unlockCB()
	msg := w.eagerMsg()
	msg.ID, msg.Header, msg.Data, msg.Reply, msg.Length = a.id, a.hdr, a.buf, ep, len(a.buf)
	msg.owned = true
	h(msg)
	if !msg.kept {
		w.lockCB()
		w.putAMBuf(a.buf)
		w.unlockCB()
	}
	w.eagerMsgDone(msg)
}

// fragArrive decodes an arrived fragment and adds it to its message. It
// returns the message's endpoint and, once the message is complete, the
// message, with the callback lock held; otherwise a nil message, the
// lock released. kind names the message in a failure's report; hdrLen
// is the length the first fragment's header must have (-1: any); failed
// counts fragments for an endpoint in error.
func (w *Worker) fragArrive(data []byte, kind string, hdrLen int, failed *uint64) (*Endpoint, *amAsm) {
	ep, m, ok := w.fragFrom(data, hdrLen, failed)
	if !ok {
		return nil, nil
	}
	return ep, w.fragAdd(ep, &m, kind)
}

// fragFrom decodes an arrived fragment and finds its endpoint. It
// returns ok with the callback lock held, or false, the lock released,
// for a fragment that is malformed or whose endpoint is closed or
// failed (counted in failed).
func (w *Worker) fragFrom(data []byte, hdrLen int, failed *uint64) (*Endpoint, userFrag, bool) {
	m, err := decodeUserFrag(data)
	if err != nil || hdrLen >= 0 && m.off == 0 && len(m.hdr) != hdrLen {
		return nil, m, false
	}
	w.lockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil {
		if ep == nil {
			w.stats.ClosedDrops++
		} else {
			*failed++
		}
		w.unlockCB()
		return nil, m, false
	}
	return ep, m, true
}

// fragAdd adds fragment m from ep to its message (lock held, from
// fragFrom) and returns the message once it is complete, the lock still
// held; otherwise nil, the lock released.
func (w *Worker) fragAdd(ep *Endpoint, m *userFrag, kind string) *amAsm {
	a, fail := w.addFrag(ep, m, kind)
	if a == nil {
		w.unlockCB()
		if fail != nil {
			w.reasmFailed(ep, kind, m.total, fail)
		}
		return nil
	}
	return a
}

// addFrag adds fragment m from ep to its message and returns the message
// once it is complete (taken out of the partial messages, its charge
// returned), else nil; fail is the cause to report (reasmFailed, without
// the lock) when the message failed its limits (lock held). A fragment
// of another kind (an active message's naming a tag message's id, or
// the reverse) does not continue the message: the message is lost.
func (w *Worker) addFrag(ep *Endpoint, m *userFrag, kind string) (a *amAsm, fail error) {
	src := match.Src(ep.id)
	if m.off == 0 {
		_, pmax := w.reasmLimits()
		if m.total > uint64(pmax) {
			return nil, fmt.Errorf("announced %d bytes > per-peer limit %d", m.total, pmax)
		}
		a = &amAsm{ep: ep, kind: kind, id: m.id, total: m.total, hdr: append([]byte(nil), m.hdr...)}
		a.f = match.Frag{Src: src, ID: m.mid, Data: a}
		if !w.amFrags.Add(&a.f) {
			return nil, nil
		}
	} else if f := w.amFrags.Get(src, m.mid); f != nil {
		var ok bool
		if a, ok = f.Data.(*amAsm); !ok || a.kind != kind {
			w.fragLost(f)
			return nil, nil
		}
	} else {
		return nil, nil
	}
	if m.off != uint64(len(a.buf)) || m.total != a.total || uint64(len(m.data)) > m.total-m.off {
		w.fragLost(&a.f) // out of order: the message is lost
		return nil, nil
	}
	if !w.reasmGrow(a, len(m.data)) {
		w.amFrags.Remove(&a.f)
		w.reasmRelease(a)
		wmax, pmax := w.reasmLimits()
		return nil, fmt.Errorf("reassembly would exceed the limits (worker %d, per peer %d)", wmax, pmax)
	}
	a.buf = append(a.buf, m.data...)
	if uint64(len(a.buf)) < a.total {
		return nil, nil
	}
	w.amFrags.Remove(&a.f)
	w.reasmRelease(a)
	return a, nil
}

// reasmFailed counts and reports a message of the given kind that failed
// its reassembly (called without the lock, from a uct callback).
func (w *Worker) reasmFailed(ep *Endpoint, kind string, length uint64, cause error) {
	w.lockCB()
	w.stats.AMReassemblyDrops++
	w.unlockCB()
	w.dropEvent(DropEvent{Reason: DropReassemblyLimit, Endpoint: ep, Length: length,
		Err: fmt.Errorf("ucp: %s from %s: %w: %w", kind, ep.name, uct.ErrNoMemory, cause)})
}

// amBufMax bounds the assembly buffers the worker keeps for reuse.
const (
	amBufMax   = 4 << 20
	amBufCount = 8
)

// getAMBuf returns an assembly buffer of n bytes (lock held).
func (w *Worker) getAMBuf(n int) []byte {
	for i := len(w.amBufs) - 1; i >= 0; i-- {
		if b := w.amBufs[i]; cap(b) >= n {
			w.amBufs = append(w.amBufs[:i], w.amBufs[i+1:]...)
			return b[:n]
		}
	}
	return make([]byte, n)
}

// putAMBuf keeps b for reuse (lock held).
func (w *Worker) putAMBuf(b []byte) {
	if cap(b) == 0 || cap(b) > amBufMax {
		return
	}
	if len(w.amBufs) == amBufCount {
		copy(w.amBufs, w.amBufs[1:]) // forget the oldest
		w.amBufs = w.amBufs[:amBufCount-1]
	}
	w.amBufs = append(w.amBufs, b)
}

// dropAMFrags drops the partial active messages from ep and returns
// their memory charge; tag messages being placed complete their receives
// with ep's failure, or uct.ErrCanceled if it is only closing (lock
// held).
func (w *Worker) dropAMFrags(ep *Endpoint) {
	for _, f := range w.amFrags.Purge(match.Src(ep.id)) {
		switch d := f.Data.(type) {
		case *amAsm:
			w.reasmRelease(d)
		case *tagPlace:
			err := ep.err
			if err == nil {
				err = uct.ErrCanceled
			}
			w.placeEnd(d, opErr("tag_recv", ep.name, err))
		}
	}
}

// fragLost removes the message f, which a fragment did not continue: an
// assembly's memory is returned, a placed tag message's receive
// completes with uct.ErrDataCorrupt (lock held).
func (w *Worker) fragLost(f *match.Frag) {
	w.amFrags.Remove(f)
	switch d := f.Data.(type) {
	case *amAsm:
		w.reasmRelease(d)
	case *tagPlace:
		w.placeEnd(d, opErr("tag_recv", d.ep.name, errPlaceLost(d)))
	}
}
