package ucp

import (
	"bytes"
	"fmt"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// Atomics on a sequenced endpoint travel as active messages instead of
// the transport's atomics: the request (amAtomicReq) carries an op id,
// and the target's worker applies it to its own registered memory with
// sync/atomic and answers (amAtomicRep) with the fetched value. Both the
// request and the answer are sequenced messages, so each is delivered
// once and in order whatever lane carries it: the target applies an
// atomic when its window delivers the request, which it does once, and
// logs the answer in its own replay log before it leaves. When a lane
// fails, each side's sync tells the other what it delivered and the other
// replays the rest of its log, the answers included: an atomic applied on
// the target whose answer was lost with the failed lane completes with
// the answer replayed on the new lane, the fetched value the target
// computed, once. The initiator never has to ask what became of an
// atomic while its endpoint lives. Only when the endpoint fails (no lane
// left, a dead peer, or the peer's endpoint replaced by a new one) does
// an atomic still waiting for its answer complete with an error matching
// failover.ErrOutcomeUnknown: it may or may not have been applied, no
// lane is left to ask, and it is not retried.

// atomics is one endpoint's atomic ops as active messages.
type atomics struct {
	pending map[uint64]*Request // ours, waiting for their answer, by op id
}

func (a *atomics) init() {
	a.pending = map[uint64]*Request{}
}

// memTable is the worker's registered and allocated memory, which
// atomics as active messages may target.
type memTable struct {
	mems []*Mem
}

func (w *Worker) addMem(m *Mem) {
	m.packed = m.PackRKey()
	w.lock()
	w.mems = append(w.mems, m)
	w.unlock()
}

func (w *Worker) dropMem(m *Mem) {
	w.lock()
	defer w.unlock()
	for i, x := range w.mems {
		if x == m {
			w.mems = append(w.mems[:i], w.mems[i+1:]...)
			return
		}
	}
}

// atomicAM sends atomic request r as an active message (lock held).
func (ep *Endpoint) atomicAM(r *Request) error {
	if r.rkey == nil || r.rkey.packed == nil {
		return fmt.Errorf("no remote key: %w", uct.ErrInvalidParam)
	}
	f := ep.fo
	opid := f.log.Next()
	m := atomicReq{dst: ep.rid, opid: opid, op: uint8(r.aop), fetch: r.kind == kAtomicFetch, value: r.value,
		compare: r.compare, raddr: r.raddr, rkey: r.rkey.packed}
	r.hdr = m.encode(r.hdr)
	if err := ep.seqSend(amAtomicReq, r.hdr, nil); err != nil {
		return err
	}
	if ep.err != nil {
		return ep.err
	}
	f.atm.pending[opid] = r
	ep.inflight.push(r)
	return nil
}

// onAtomicReq applies a peer's atomic to our memory, once, and answers.
func (w *Worker) onAtomicReq(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeAtomicReq(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.err != nil || ep.fo == nil {
		return
	}
	rep := atomicRep{dst: ep.rid, opid: m.opid}
	res, st := w.applyAtomic(&m)
	rep.result, rep.status = res, uint8(st)
	if st == uct.OK {
		w.stats.AtomicsApplied++
	}
	ep.ctl(amAtomicRep, rep.encode)
}

// applyAtomic applies m to the worker's memory that its key and address
// name (lock held); a key or a range that names none of it is
// uct.ErrRemoteProtection.
func (w *Worker) applyAtomic(m *atomicReq) (uint64, uct.Status) {
	for _, mem := range w.mems {
		if len(mem.parts) == 0 || !bytes.Equal(mem.packed, m.rkey) {
			continue
		}
		base := mem.Address()
		if m.raddr < base || m.raddr-base > uint64(len(mem.buf)) || uint64(len(mem.buf))-(m.raddr-base) < 8 {
			return 0, uct.ErrRemoteProtection
		}
		off := m.raddr - base
		if off%8 != 0 {
			return 0, uct.ErrInvalidParam
		}
		res, ok := atomicApply(mem.buf[off:off+8], uct.AtomicOp(m.op), m.value, m.compare)
		if !ok {
			return 0, uct.ErrUnsupported
		}
		return res, uct.OK
	}
	return 0, uct.ErrRemoteProtection
}

// onAtomicRep completes one of our atomics with the target's answer.
func (w *Worker) onAtomicRep(_ any, data []byte, _ uct.AMFlags) {
	m, err := decodeAtomicRep(data)
	if err != nil {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	ep := w.epByID(m.dst)
	if ep == nil || ep.fo == nil {
		return
	}
	r := ep.fo.atm.pending[m.opid]
	if r == nil {
		return
	}
	delete(ep.fo.atm.pending, m.opid)
	switch {
	case m.status == 0:
		if r.kind == kAtomicFetch && r.result != nil {
			*r.result = m.result
		}
		w.complete(r, nil)
	default:
		w.complete(r, opErr(kindOp[r.kind], ep.name, fmt.Errorf("target: %w", uct.Status(m.status))))
	}
}

// atomicsLost completes ep's atomics whose answer has not come, as ep
// fails with err (lock held): whether the target applied them is
// unknown.
func (w *Worker) atomicsLost(ep *Endpoint, err error) {
	if ep.fo == nil {
		return
	}
	for id, r := range ep.fo.atm.pending {
		delete(ep.fo.atm.pending, id)
		r.zombie = false
		w.complete(r, opErr(kindOp[r.kind], ep.name, fmt.Errorf("%w: %w", failover.ErrOutcomeUnknown, err)))
	}
}
