package ucttest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// RemoteMem is memory on B that A reaches with RKey.
type RemoteMem struct {
	Mem  uct.Mem
	RKey uct.RKey
	Buf  []byte // the bytes (B's view)
}

// RemoteMemory registers (alloc=false) or allocates size bytes on B's MD
// and unpacks its key on A's MD. It skips when the MD cannot do it.
func (h *Harness) RemoteMemory(size int, alloc bool) *RemoteMem {
	h.T.Helper()
	attr := h.P.MDB.Attr()
	var (
		m   uct.Mem
		err error
		buf []byte
	)
	if alloc {
		if !attr.CanAlloc {
			h.T.Skipf("MD %s cannot allocate", attr.Component)
		}
		m, err = h.P.MDB.Alloc(size, uct.AccessAll)
		if err == nil {
			buf = m.Bytes()
		}
	} else {
		if !attr.CanRegister {
			h.T.Skipf("MD %s cannot register", attr.Component)
		}
		buf = make([]byte, size)
		m, err = h.P.MDB.Register(buf, uct.AccessAll)
	}
	if err != nil {
		h.T.Fatalf("remote memory (alloc=%v) of %d bytes: %v", alloc, size, err)
	}
	if len(m.Bytes()) < size {
		h.T.Fatalf("Mem.Bytes has %d bytes, want %d", len(m.Bytes()), size)
	}
	rk, err := h.P.MDA.UnpackRKey(m.PackRKey())
	if err != nil {
		h.T.Fatalf("unpack rkey: %v", err)
	}
	h.T.Cleanup(func() {
		_ = rk.Close()
		_ = m.Close()
		runtime.KeepAlive(buf)
	})
	return &RemoteMem{Mem: m, RKey: rk, Buf: m.Bytes()}
}

func testPutGet(t *testing.T, h *Harness, alloc bool) {
	if !h.AttrA.Cap.Has(uct.CapPutShort) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutZcopy) {
		t.Skip("iface has no put")
	}
	const size = 1 << 20
	rm := h.RemoteMemory(size+4096, alloc)
	base := rm.Mem.Address()
	off := 64
	type putKind struct {
		cap  uct.Cap
		name string
		max  int
		put  func(p []byte, raddr uint64, c *uct.Completion) error
	}
	kinds := []putKind{
		{uct.CapPutShort, "PutShort", h.AttrA.PutMaxShort, func(p []byte, raddr uint64, _ *uct.Completion) error {
			return h.EP.PutShort(p, raddr, rm.RKey)
		}},
		{uct.CapPutBcopy, "PutBcopy", h.AttrA.PutMaxBcopy, func(p []byte, raddr uint64, _ *uct.Completion) error {
			n, err := h.EP.PutBcopy(p, raddr, rm.RKey)
			if err == nil && n != len(p) {
				return fmt.Errorf("PutBcopy returned length %d for %d bytes", n, len(p))
			}
			return err
		}},
		{uct.CapPutZcopy, "PutZcopy", h.AttrA.PutMaxZcopy, func(p []byte, raddr uint64, c *uct.Completion) error {
			return h.EP.PutZcopy([][]byte{p[:len(p)/2], p[len(p)/2:]}, raddr, rm.RKey, c)
		}},
	}
	seed := byte(1)
	for _, k := range kinds {
		if !h.AttrA.Cap.Has(k.cap) {
			t.Logf("skipping %s: not in Cap", k.name)
			continue
		}
		for _, n := range sizesUpTo(min(k.max, size)) {
			p := pattern(n, seed)
			seed++
			raddr := base + uint64(off)
			h.Must(fmt.Sprintf("%s %d bytes", k.name, n), func(c *uct.Completion) error { return k.put(p, raddr, c) })
			h.FlushEP()
			if !bytes.Equal(rm.Buf[off:off+n], p) {
				t.Errorf("%s %d bytes: target memory differs after flush", k.name, n)
			}
			if rm.Buf[off-1] != 0 || rm.Buf[off+n] != 0 {
				t.Errorf("%s %d bytes: wrote outside the target range", k.name, n)
			}
			clear(rm.Buf)
		}
	}
	type getKind struct {
		cap  uct.Cap
		name string
		max  int
		get  func(dst []byte, raddr uint64, c *uct.Completion) error
	}
	gets := []getKind{
		{uct.CapGetBcopy, "GetBcopy", h.AttrA.GetMaxBcopy, func(dst []byte, raddr uint64, c *uct.Completion) error {
			return h.EP.GetBcopy(dst, raddr, rm.RKey, c)
		}},
		{uct.CapGetZcopy, "GetZcopy", h.AttrA.GetMaxZcopy, func(dst []byte, raddr uint64, c *uct.Completion) error {
			return h.EP.GetZcopy([][]byte{dst[:len(dst)/3], dst[len(dst)/3:]}, raddr, rm.RKey, c)
		}},
	}
	for _, k := range gets {
		if !h.AttrA.Cap.Has(k.cap) {
			t.Logf("skipping %s: not in Cap", k.name)
			continue
		}
		for _, n := range sizesUpTo(min(k.max, size)) {
			p := pattern(n, seed)
			seed++
			copy(rm.Buf[off:], p)
			dst := make([]byte, n+2)
			h.Must(fmt.Sprintf("%s %d bytes", k.name, n), func(c *uct.Completion) error { return k.get(dst[1:n+1], base+uint64(off), c) })
			if !bytes.Equal(dst[1:n+1], p) {
				t.Errorf("%s %d bytes: local buffer differs from remote memory", k.name, n)
			}
			if dst[0] != 0 || dst[n+1] != 0 {
				t.Errorf("%s %d bytes: wrote outside the local buffer", k.name, n)
			}
		}
	}
}

func (h *Harness) word(rm *RemoteMem, off, size int) uint64 {
	h.FlushEP()
	if size == 4 {
		return uint64(binary.NativeEndian.Uint32(rm.Buf[off:]))
	}
	return binary.NativeEndian.Uint64(rm.Buf[off:])
}

func (h *Harness) setWord(rm *RemoteMem, off, size int, v uint64) {
	if size == 4 {
		binary.NativeEndian.PutUint32(rm.Buf[off:], uint32(v))
	} else {
		binary.NativeEndian.PutUint64(rm.Buf[off:], v)
	}
}

func testAtomics(t *testing.T, h *Harness, size int) {
	c := uct.CapAtomic64
	if size == 4 {
		c = uct.CapAtomic32
	}
	h.NeedCap(c, fmt.Sprintf("%d-bit atomics", size*8))
	rm := h.RemoteMemory(4096, h.P.MDB.Attr().CanAlloc)
	raddr := rm.Mem.Address() + 64
	mask := ^uint64(0)
	if size == 4 {
		mask = 0xffffffff
	}
	start := uint64(0xfffffff0) & mask
	h.setWord(rm, 64, size, start)

	h.Must("AtomicPost add", func(*uct.Completion) error {
		return h.EP.AtomicPost(uct.AtomicAdd, size, 0x20, raddr, rm.RKey)
	})
	want := (start + 0x20) & mask
	if got := h.word(rm, 64, size); got != want {
		t.Errorf("after post add: %#x, want %#x", got, want)
	}

	fetch := func(name string, op uct.AtomicOp, v, cmp uint64) uint64 {
		var old uint64
		h.Must(name, func(c *uct.Completion) error {
			return h.EP.AtomicFetch(op, size, v, cmp, &old, raddr, rm.RKey, c)
		})
		return old
	}
	if old := fetch("fetch-add", uct.AtomicAdd, 5, 0); old != want {
		t.Errorf("fetch-add returned %#x, want %#x", old, want)
	}
	want = (want + 5) & mask
	if got := h.word(rm, 64, size); got != want {
		t.Errorf("after fetch-add: %#x, want %#x", got, want)
	}
	swapIn := uint64(0xa5a5a5a5_5a5a5a5a) & mask
	if old := fetch("swap", uct.AtomicSwap, swapIn, 0); old != want {
		t.Errorf("swap returned %#x, want %#x", old, want)
	}
	if got := h.word(rm, 64, size); got != swapIn {
		t.Errorf("after swap: %#x, want %#x", got, swapIn)
	}
	// compare-swap that fails: the word is unchanged, the old value returned.
	if old := fetch("cswap (mismatch)", uct.AtomicCSwap, 7, swapIn^1); old != swapIn {
		t.Errorf("failing cswap returned %#x, want %#x", old, swapIn)
	}
	if got := h.word(rm, 64, size); got != swapIn {
		t.Errorf("after failing cswap: %#x, want unchanged %#x", got, swapIn)
	}
	if old := fetch("cswap (match)", uct.AtomicCSwap, 7, swapIn); old != swapIn {
		t.Errorf("cswap returned %#x, want %#x", old, swapIn)
	}
	if got := h.word(rm, 64, size); got != 7 {
		t.Errorf("after cswap: %#x, want 7", got)
	}
	// Neighbouring words are untouched.
	for _, o := range []int{64 - size, 64 + size} {
		if got := h.word(rm, o, size); got != 0 {
			t.Errorf("neighbouring word at %d changed to %#x", o, got)
		}
	}
	// Bad size.
	err := h.EP.AtomicPost(uct.AtomicAdd, 3, 1, raddr, rm.RKey)
	if !errors.Is(err, uct.ErrInvalidParam) && !errors.Is(err, uct.ErrUnsupported) {
		t.Errorf("AtomicPost size 3: %v, want ErrInvalidParam or ErrUnsupported", err)
	}
}

// putAny posts one put of p with the best put the iface has.
func (h *Harness) putAny(p []byte, raddr uint64, rk uct.RKey, c *uct.Completion) error {
	switch {
	case h.AttrA.Cap.Has(uct.CapPutZcopy) && len(p) <= h.AttrA.PutMaxZcopy:
		return h.EP.PutZcopy([][]byte{p}, raddr, rk, c)
	case h.AttrA.Cap.Has(uct.CapPutBcopy) && len(p) <= h.AttrA.PutMaxBcopy:
		_, err := h.EP.PutBcopy(p, raddr, rk)
		return err
	case h.AttrA.Cap.Has(uct.CapPutShort) && len(p) <= h.AttrA.PutMaxShort:
		return h.EP.PutShort(p, raddr, rk)
	}
	h.T.Skipf("no put for %d bytes", len(p))
	return nil
}

func isAddrErr(err error) bool {
	for _, s := range []uct.Status{uct.ErrInvalidParam, uct.ErrInvalidAddress, uct.ErrRemoteProtection, uct.ErrLocalProtection} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func testBadRKey(t *testing.T, h *Harness) {
	for _, packed := range [][]byte{nil, {}, {1}, bytes.Repeat([]byte{0xff}, 64), make([]byte, 3)} {
		rk, err := h.P.MDA.UnpackRKey(packed)
		if err == nil {
			_ = rk.Close()
			if len(packed) < h.P.MDA.Attr().RKeySize {
				t.Errorf("UnpackRKey(%x) of fewer than RKeySize (%d) bytes succeeded", packed, h.P.MDA.Attr().RKeySize)
			}
			continue
		}
		if !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("UnpackRKey(%x): %v does not wrap ErrInvalidParam", packed, err)
		}
	}
}

// testClosedMemKey: a well-formed key whose memory has been closed must be
// refused by the target (or at the latest give an error on the operation):
// a write into memory the owner has released would corrupt it.
func testClosedMemKey(t *testing.T, h *Harness) {
	if !h.AttrA.Cap.Has(uct.CapPutShort) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutZcopy) {
		t.Skip("iface has no put")
	}
	rm := h.RemoteMemory(4096, !h.P.MDB.Attr().CanRegister)
	raddr := rm.Mem.Address()
	if err := rm.Mem.Close(); err != nil {
		t.Fatalf("close remote mem: %v", err)
	}
	err := h.Do("put with the key of closed memory", func(c *uct.Completion) error {
		return h.putAny([]byte{1, 2, 3, 4, 5, 6, 7, 8}, raddr, rm.RKey, c)
	})
	if err == nil {
		h.FlushEP() // the error may also come with the flush
		t.Errorf("put with the key of closed memory succeeded")
	} else if !isAddrErr(err) {
		t.Errorf("put with the key of closed memory: %v, want ErrInvalidParam/ErrInvalidAddress/ErrRemoteProtection", err)
	}
}

func testBadRemoteAddress(t *testing.T, h *Harness) {
	if !h.AttrA.Cap.Has(uct.CapPutShort) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutZcopy) {
		t.Skip("iface has no put")
	}
	rm := h.RemoteMemory(4096, !h.P.MDB.Attr().CanRegister)
	base := rm.Mem.Address()
	for _, c := range []struct {
		name  string
		raddr uint64
		n     int
	}{
		{"past the end", base + 4096, 8},
		{"straddling the end", base + 4092, 8},
		{"before the start", base - 8, 8},
		{"at address 0", 0, 8},
		{"wrapping", ^uint64(0) - 3, 8},
	} {
		if c.n > max(h.AttrA.PutMaxShort, h.AttrA.PutMaxBcopy, h.AttrA.PutMaxZcopy) {
			continue
		}
		err := h.Do("put "+c.name, func(cc *uct.Completion) error {
			return h.putAny(pattern(c.n, 9), c.raddr, rm.RKey, cc)
		})
		if err == nil {
			t.Errorf("put %s of the registered range succeeded", c.name)
		} else if !isAddrErr(err) {
			t.Errorf("put %s: %v, want ErrInvalidParam/ErrInvalidAddress/ErrRemoteProtection", c.name, err)
		}
		if e := h.EP.Err(); e != nil {
			// rc semantics: a remote access error puts the endpoint in error;
			// the remaining cases need a healthy endpoint.
			t.Logf("endpoint in error state after a bad address (%v); stopping", e)
			break
		}
	}
	for i, b := range rm.Buf {
		if b != 0 {
			t.Fatalf("byte %d of the registered range changed by a refused put", i)
		}
	}
}
