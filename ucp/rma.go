package ucp

import (
	"fmt"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/uct"
)

// Mem is memory made accessible to peers: registered user memory (MemMap)
// or memory allocated from a transport (MemAlloc, needed for atomics on
// shm).
type Mem struct {
	w      *Worker
	buf    []byte
	parts  []memPart
	packed []byte // PackRKey, for atomics as active messages (atomic_am.go)
}

type memPart struct {
	name string
	m    uct.Mem
}

// MemMap registers buf with the memory domain of every iface of the
// worker (every transport, and for rc every netdev). buf must stay referenced
// until Close.
func (w *Worker) MemMap(buf []byte) (*Mem, error) {
	m := &Mem{w: w, buf: buf}
	for _, wi := range w.ifaces {
		md := wi.md
		if !md.attr.CanRegister {
			continue
		}
		um, err := md.md.Register(buf, uct.AccessAll)
		if err != nil {
			m.Close()
			return nil, opErr("mem_map", "", err)
		}
		m.parts = append(m.parts, memPart{mdPartName(md.comp.Name(), wi.ord), um})
	}
	if len(m.parts) == 0 {
		return nil, opErr("mem_map", "", uct.ErrUnsupported)
	}
	w.addMem(m)
	return m, nil
}

// MemAlloc allocates size bytes from the first transport that can
// allocate shareable memory. A worker with several rc ifaces, or with
// failover to any transport, also registers the memory with its other
// ifaces' memory domains, so every lane can reach it.
func (w *Worker) MemAlloc(size int) (*Mem, error) {
	for _, md := range w.ctx.mds {
		if !md.attr.CanAlloc {
			continue
		}
		um, err := md.md.Alloc(size, uct.AccessAll)
		if err != nil {
			return nil, opErr("mem_alloc", "", err)
		}
		m := &Mem{w: w, buf: um.Bytes(), parts: []memPart{{md.comp.Name(), um}}}
		if err := w.registerOnRails(m, md); err != nil {
			m.Close()
			return nil, opErr("mem_alloc", "", err)
		}
		w.addMem(m)
		return m, nil
	}
	return nil, opErr("mem_alloc", "", uct.ErrUnsupported)
}

// Bytes returns the memory.
func (m *Mem) Bytes() []byte { return m.buf }

// Address is the remote address of the memory's first byte.
func (m *Mem) Address() uint64 { return m.parts[0].m.Address() }

// PackRKey returns the remote key bundle (one key per transport) to send
// to peers.
func (m *Mem) PackRKey() []byte {
	ps := make([]bundlePart, len(m.parts))
	for i, p := range m.parts {
		ps[i] = bundlePart{p.name, p.m.PackRKey()}
	}
	return packBundle(ps)
}

// Close deregisters or frees the memory; idempotent.
func (m *Mem) Close() error {
	if m.packed != nil {
		m.w.dropMem(m)
		m.packed = nil
	}
	var err error
	for _, p := range m.parts {
		err = multierr.Append(err, p.m.Close())
	}
	m.parts = nil
	return err
}

type bundlePart struct {
	name string
	key  []byte
}

// packBundle encodes keys: count u8, then per key name (u8 length +
// bytes) and key (u16 length + bytes). A key's name is its memory
// domain's (mdPartName): the transport, followed by "#" and the iface's
// ordinal for a worker's second and later ifaces of one transport.
func packBundle(ps []bundlePart) []byte {
	b := []byte{byte(len(ps))}
	for _, p := range ps {
		b = append(b, byte(len(p.name)))
		b = append(b, p.name...)
		b = le.AppendUint16(b, uint16(len(p.key)))
		b = append(b, p.key...)
	}
	return b
}

// decodeBundle decodes a key bundle; bad input wraps uct.ErrInvalidParam.
func decodeBundle(b []byte) ([]bundlePart, error) {
	r := reader{b: b}
	n := int(r.u8())
	if r.err || n == 0 || n > maxIfaces {
		return nil, fmt.Errorf("ucp rkey: %d keys: %w", n, uct.ErrInvalidParam)
	}
	ps := make([]bundlePart, 0, n)
	for i := 0; i < n; i++ {
		name := r.take(int(r.u8()))
		key := r.take(int(r.u16()))
		if r.err || len(name) == 0 {
			return nil, fmt.Errorf("ucp rkey: short: %w", uct.ErrInvalidParam)
		}
		ps = append(ps, bundlePart{string(name), key})
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("ucp rkey: trailing bytes: %w", uct.ErrInvalidParam)
	}
	return ps, nil
}

// unpackLaneKey unpacks from a bundle the key of the memory domain behind
// the peer iface of lane i (mdPartName: its transport and ordinal).
func (ep *Endpoint) unpackLaneKey(b []byte, i int) (uct.RKey, error) {
	ps, err := decodeBundle(b)
	if err != nil {
		return nil, err
	}
	ln := &ep.lanes[i]
	name := mdPartName(ln.wi.md.comp.Name(), ln.rord)
	for _, p := range ps {
		if p.name == name {
			return ln.wi.md.md.UnpackRKey(p.key)
		}
	}
	return nil, fmt.Errorf("ucp rkey: no key for %s: %w", name, uct.ErrUnsupported)
}

// RKey is a peer's remote key unpacked for one endpoint's lanes.
type RKey struct {
	keys   []uct.RKey // by lane
	packed []byte     // the bundle (atomics as active messages)
}

// UnpackRKey unpacks a key bundle from Mem.PackRKey of the peer.
func (ep *Endpoint) UnpackRKey(b []byte) (*RKey, error) {
	ep.w.lock()
	defer ep.w.unlock()
	if ep.err != nil {
		return nil, ep.fail("unpack_rkey")
	}
	k := &RKey{keys: make([]uct.RKey, len(ep.lanes)), packed: append([]byte(nil), b...)}
	var first error
	for i := range ep.lanes {
		uk, err := ep.unpackLaneKey(b, i)
		if err != nil {
			first = err
			continue
		}
		k.keys[i] = uk
	}
	if ep.rmaLane < 0 || k.keys[ep.rmaLane] == nil {
		k.Close()
		if first == nil {
			first = uct.ErrUnsupported
		}
		return nil, opErr("unpack_rkey", ep.name, first)
	}
	return k, nil
}

// Close releases the key.
func (k *RKey) Close() error {
	var err error
	for _, uk := range k.keys {
		if uk != nil {
			err = multierr.Append(err, uk.Close())
		}
	}
	k.keys = nil
	return err
}

// Put writes buf to the peer's memory at raddr (a Mem's Address plus an
// offset) under rkey. buf must stay untouched until completion.
//
// As ucp_put_nbx, Put returns nil when a put that fits the RMA lane's
// short limit was written inside the call and p asks for no request (see
// TagSend); buf may then be reused at once.
func (ep *Endpoint) Put(buf []byte, raddr uint64, rkey *RKey, p *Params) *Request {
	return ep.rma(kPut, buf, raddr, rkey, p)
}

// Get reads len(buf) bytes of the peer's memory at raddr into buf.
func (ep *Endpoint) Get(buf []byte, raddr uint64, rkey *RKey, p *Params) *Request {
	return ep.rma(kGet, buf, raddr, rkey, p)
}

func (ep *Endpoint) rma(kind reqKind, buf []byte, raddr uint64, rkey *RKey, p *Params) *Request {
	w := ep.w
	w.lock()
	defer w.unlock()
	if kind == kPut && p.noRequest() && ep.putNow(buf, raddr, rkey) {
		return nil
	}
	r := w.getReq(kind, ep, p)
	r.buf, r.raddr, r.rkey = buf, raddr, rkey
	r.info.Length = len(buf)
	ep.post(r)
	return r
}

// AtomicPost applies op (add, and, or, xor) with value to the 64-bit word
// at raddr.
func (ep *Endpoint) AtomicPost(op AtomicOp, value, raddr uint64, rkey *RKey, p *Params) *Request {
	return ep.atomic(kAtomic, op, value, 0, nil, raddr, rkey, p)
}

// AtomicFetch applies op (add, and, or, xor, swap, cswap) to the 64-bit
// word at raddr and stores the old value in *result. For cswap, value is
// stored if the word equals compare.
func (ep *Endpoint) AtomicFetch(op AtomicOp, value, compare uint64, result *uint64, raddr uint64, rkey *RKey, p *Params) *Request {
	return ep.atomic(kAtomicFetch, op, value, compare, result, raddr, rkey, p)
}

func (ep *Endpoint) atomic(kind reqKind, op AtomicOp, value, compare uint64, result *uint64, raddr uint64, rkey *RKey, p *Params) *Request {
	w := ep.w
	w.lock()
	defer w.unlock()
	r := w.getReq(kind, ep, p)
	r.aop, r.value, r.compare, r.result, r.raddr, r.rkey = op.uct(), value, compare, result, raddr, rkey
	ep.post(r)
	return r
}

func (ep *Endpoint) laneKey(r *Request) (*lane, uct.RKey, error) {
	if ep.rmaLane < 0 || r.rkey == nil || ep.rmaLane >= len(r.rkey.keys) || r.rkey.keys[ep.rmaLane] == nil {
		return nil, nil, fmt.Errorf("no remote key for the RMA lane: %w", uct.ErrInvalidParam)
	}
	return &ep.lanes[ep.rmaLane], r.rkey.keys[ep.rmaLane], nil
}

// doRMA posts a put or get (lock held).
func (ep *Endpoint) doRMA(r *Request) error {
	_, k, err := ep.laneKey(r)
	if err != nil {
		return err
	}
	if len(ep.rails) > 1 && ep.w.stripeRMA(r, ep) {
		return nil
	}
	ep.w.startChunks(r, ep.rmaLane, r.kind == kPut, r.buf, r.raddr, k)
	return nil
}

// doAtomic posts an atomic (lock held).
func (ep *Endpoint) doAtomic(r *Request) error {
	if ep.fo != nil {
		return ep.atomicAM(r)
	}
	ln, k, err := ep.laneKey(r)
	if err != nil {
		return err
	}
	if r.kind == kAtomic {
		if err := ln.ep.AtomicPost(r.aop, 8, r.value, r.raddr, k); err != nil {
			return err
		}
		ep.w.complete(r, nil)
		return nil
	}
	r.comp.Count = 1
	err = ln.ep.AtomicFetch(r.aop, 8, r.value, r.compare, r.result, r.raddr, k, &r.comp)
	if err == uct.ErrInProgress {
		ep.inflight.push(r)
		return nil
	}
	if err != nil {
		return err
	}
	ep.w.complete(r, nil)
	return nil
}
