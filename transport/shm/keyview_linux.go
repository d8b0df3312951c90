package shm

import (
	"sync/atomic"

	"github.com/ucgo/ucgo/uct"
)

// keyView is what the last full check of an RKey against its target's key
// table established for one endpoint: the entry's bounds, rights and
// mapped memory, and where the entry's generation word lies in that
// endpoint's mapping of the table. An operation that fits the view pays a
// bounds compare and one load of the generation word (the target clears
// it when it deregisters or frees the memory) instead of a full read of
// the entry, so a deregistered key still fails at once; anything else
// (another endpoint, other bounds or rights, a changed generation) takes
// the full check in RKey.window.
type keyView struct {
	ep     *Endpoint
	gen    *uint32 // the entry's generation word in ep's mapped key table
	want   uint32
	access uct.Access
	base   uint64
	length uint64
	mem    []byte // allocated memory as mapped here; nil for registered memory
	wmem   []byte // mem if the entry grants remote writes, else nil
	rmem   []byte // mem if the entry grants remote reads, else nil
	// wptr and wlim are wmem for PutShort's store: its first byte and
	// its length plus one (0 without the right to write), so that one
	// pair of compares, off < wlim and n < wlim-off, takes the bounds and
	// the right together.
	wptr *byte
	wlim uint64
}

// lookup returns the bytes [raddr, raddr+n) of the view's memory (nil for
// registered memory) and true if the operation fits the view.
func (v *keyView) lookup(ep *Endpoint, raddr uint64, n int, need uct.Access) ([]byte, bool) {
	if v.ep != ep || v.access&need != need || raddr < v.base || uint64(n) > v.length || raddr-v.base > v.length-uint64(n) ||
		atomic.LoadUint32(v.gen) != v.want {
		return nil, false
	}
	if v.mem == nil {
		return nil, true
	}
	off := raddr - v.base
	return v.mem[off : off+uint64(n) : off+uint64(n)], true
}

// setView records a successful full check of k for ep: the entry e found
// in ep's key table tab, and the mapping p of allocated memory (nil for
// registered memory).
func (k *RKey) setView(ep *Endpoint, tab []byte, e keyEntry, p *[]byte) {
	v := &keyView{ep: ep, gen: u32at(tab, keOff(k.slot)+keGen), want: e.gen, access: e.access, base: e.base, length: e.length}
	if p != nil {
		v.mem = *p
		if e.access&uct.AccessRemoteWrite != 0 {
			v.wmem = v.mem
			if len(v.mem) > 0 {
				v.wptr, v.wlim = &v.mem[0], uint64(len(v.mem))+1
			}
		}
		if e.access&uct.AccessRemoteRead != 0 {
			v.rmem = v.mem
		}
	}
	k.view.Store(v)
}

// direct returns the bytes [raddr, raddr+n) of allocated memory that a
// key's view maps, if the view holds for ep and the endpoint is usable:
// the RMA fast path, a plain copy with no per-operation bookkeeping
// beyond the checks. Any other case (no view yet, registered memory, an
// error to report) returns false and takes the full path, which reports
// it.
func (ep *Endpoint) direct(rk uct.RKey, raddr uint64, n int, need uct.Access) ([]byte, bool) {
	k, _ := rk.(*RKey)
	if k == nil {
		return nil, false
	}
	v := k.view.Load()
	if v == nil || v.mem == nil || ep.err.Load() != nil || atomic.LoadUint32(ep.disabled) != 0 {
		return nil, false
	}
	return v.lookup(ep, raddr, n, need)
}

// directPut is direct for a write: the checks of lookup with the right
// to write folded into the view (wmem is nil without it) and the bounds
// in two compares against the mapping, whose length is the entry's.
func (ep *Endpoint) directPut(rk uct.RKey, raddr uint64, n int) ([]byte, bool) {
	k, _ := rk.(*RKey)
	if k == nil {
		return nil, false
	}
	v := k.view.Load()
	if v == nil || v.ep != ep || v.wmem == nil {
		return nil, false
	}
	off, size := raddr-v.base, uint64(len(v.wmem))
	if off > size || uint64(n) > size-off || ep.err.Load() != nil || atomic.LoadUint32(ep.disabled) != 0 ||
		atomic.LoadUint32(v.gen) != v.want {
		return nil, false
	}
	return v.wmem[off : off+uint64(n) : off+uint64(n)], true
}
