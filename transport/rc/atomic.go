package rc

import (
	"encoding/binary"
	"fmt"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// Atomics. Verbs has only 64-bit FETCH_AND_ADD and CMP_AND_SWP. A 64-bit
// add and a 64-bit compare-swap map to them directly. Every other atomic
// (swap, and, or, xor of 64 bits and every 32-bit operation) is emulated
// with a compare-and-swap loop on the aligned 64-bit word that contains the
// operand: the first CMP_AND_SWP guesses the word is 0; each completion
// returns the word's actual value, and while it differs from the guess the
// next CMP_AND_SWP tries again with that value as the guess and the
// operation applied to it. The loop ends when a CMP_AND_SWP finds its
// guess, so the operation took effect atomically on the value it returns;
// a 32-bit operation leaves the other half of the word unchanged because
// the swap value carries it as it was. This is correct under concurrent
// atomics of any peer (and against local CPU atomics on the word): every
// change of the word goes through a compare-and-swap on the target's
// memory. It is lock-free, not wait-free.
//
// An endpoint runs one emulated atomic at a time (later ones queue in
// order), so its own operations on a word do not defeat each other's
// guesses; after the first, the guess is the value the previous one left
// in the same word, so without concurrent writers an emulated atomic takes
// one round trip.

func (o *op) extract(word uint64) uint64 {
	if o.size == 8 {
		return word
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], word)
	return uint64(binary.NativeEndian.Uint32(b[o.off:]))
}

func (o *op) merge(word, v uint64) uint64 {
	if o.size == 8 {
		return v
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], word)
	binary.NativeEndian.PutUint32(b[o.off:], uint32(v))
	return binary.NativeEndian.Uint64(b[:])
}

// apply returns the word after the op is applied to word.
func (o *op) apply(word uint64) uint64 {
	cur := o.extract(word)
	var v uint64
	switch o.aop {
	case uct.AtomicAdd:
		v = cur + o.value
	case uct.AtomicAnd:
		v = cur & o.value
	case uct.AtomicOr:
		v = cur | o.value
	case uct.AtomicXor:
		v = cur ^ o.value
	case uct.AtomicSwap:
		v = o.value
	case uct.AtomicCSwap:
		v = cur
		if cur == o.compare {
			v = o.value
		}
	}
	return o.merge(word, v)
}

// casStep posts the next compare-and-swap of an emulated atomic that found
// the word at old.
func (ep *Endpoint) casStep(o *op, idx int32, old uint64) error {
	o.guess = old
	wr := verbs.SendWR{Opcode: verbs.WRAtomicCmpAndSwp, SG: ep.it.sge[:1], RemoteAddr: o.waddr, RKey: o.rkey,
		CompareAdd: old, Swap: o.apply(old)}
	wr.SG[0] = ep.it.resMR.SGE(int(idx)*8, 8)
	if err := ep.post(o, idx, &wr, false); err != nil {
		return ep.opErr(o.name, uct.OK, err)
	}
	return nil
}

// AtomicPost applies add/and/or/xor without returning the old value.
func (ep *Endpoint) AtomicPost(aop uct.AtomicOp, size int, value uint64, raddr uint64, rk uct.RKey) error {
	if aop != uct.AtomicAdd && aop != uct.AtomicAnd && aop != uct.AtomicOr && aop != uct.AtomicXor {
		return ep.opErr("atomic_post", uct.ErrInvalidParam, fmt.Errorf("operation %d cannot be posted", aop))
	}
	err := ep.atomic("atomic_post", aop, size, value, 0, nil, raddr, rk, nil)
	if err == uct.ErrInProgress {
		return nil // done when a flush says so
	}
	return err
}

// AtomicFetch applies op and stores the old value in *result.
func (ep *Endpoint) AtomicFetch(aop uct.AtomicOp, size int, value, compare uint64, result *uint64, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	if aop < uct.AtomicAdd || aop > uct.AtomicCSwap || result == nil {
		return ep.opErr("atomic_fetch", uct.ErrInvalidParam, fmt.Errorf("operation %d, result %p", aop, result))
	}
	return ep.atomic("atomic_fetch", aop, size, value, compare, result, raddr, rk, comp)
}

func (ep *Endpoint) atomic(name string, aop uct.AtomicOp, size int, value, compare uint64, result *uint64, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	if size != 4 && size != 8 {
		return ep.opErr(name, uct.ErrInvalidParam, fmt.Errorf("size %d", size))
	}
	if raddr%uint64(size) != 0 {
		return ep.opErr(name, uct.ErrInvalidParam, fmt.Errorf("address %#x not aligned to %d", raddr, size))
	}
	key, err := ep.rkeyOf(name, rk)
	if err != nil {
		return err
	}
	if err := ep.check(name); err != nil {
		return err
	}
	if ep.noRoom(false) {
		return uct.ErrNoResource
	}
	mask := ^uint64(0)
	if size == 4 {
		mask = 0xffffffff
	}
	o, idx := ep.newOp(opAtomic, name, comp)
	o.aop, o.size, o.value, o.compare, o.result = aop, size, value&mask, compare&mask, result
	o.waddr, o.off, o.rkey = raddr&^7, int(raddr&7), key
	wr := verbs.SendWR{SG: ep.it.sge[:1], RemoteAddr: o.waddr, RKey: key}
	wr.SG[0] = ep.it.resMR.SGE(int(idx)*8, 8)
	switch {
	case size == 8 && aop == uct.AtomicAdd:
		wr.Opcode, wr.CompareAdd = verbs.WRAtomicFetchAndAdd, value
	case size == 8 && aop == uct.AtomicCSwap:
		wr.Opcode, wr.CompareAdd, wr.Swap = verbs.WRAtomicCmpAndSwp, compare, value
	default:
		o.emul = true
		o.seq = ep.nextSeq
		ep.nextSeq++
		ep.done = append(ep.done, false)
		if ep.emulActive {
			ep.emulWait = append(ep.emulWait, idx)
			return uct.ErrInProgress
		}
		ep.emulActive = true
		if err := ep.casStep(o, idx, ep.guessFor(o.waddr)); err != nil {
			// Not posted: undo the numbering and the slot.
			ep.emulActive = false
			ep.nextSeq--
			ep.done = ep.done[:len(ep.done)-1]
			ep.freeOp(o, idx)
			return err
		}
		return uct.ErrInProgress
	}
	if err := ep.postNew(o, idx, &wr); err != nil {
		return err
	}
	return uct.ErrInProgress
}

// guessFor is the value the last emulated atomic left at waddr, else 0.
func (ep *Endpoint) guessFor(waddr uint64) uint64 {
	if ep.lastValid && ep.lastAddr == waddr {
		return ep.lastWord
	}
	return 0
}

// emulDone is called when the running emulated atomic finished: it starts
// the next queued one.
func (ep *Endpoint) emulDone(o *op, ok bool) {
	ep.lastValid = ok
	if ok {
		ep.lastAddr, ep.lastWord = o.waddr, o.apply(o.guess)
	}
	ep.emulActive = false
	for len(ep.emulWait) > 0 && !ep.closed {
		idx := ep.emulWait[0]
		ep.emulWait = ep.emulWait[1:]
		next := &ep.it.ops[idx]
		ep.emulActive = true
		if err := ep.casStep(next, idx, ep.guessFor(next.waddr)); err != nil {
			ep.emulActive = false
			ep.it.finish(next, idx, err)
			continue
		}
		return
	}
}
