package ucttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Pair is two ifaces that can connect to each other and the memory domains
// they were opened on. Both must live in the calling process: the suite
// reads and writes B's registered memory directly to check puts and gets
// (cross-process behaviour belongs to the transport's own tests). Cleanup, if set, is run after the case (after the
// ifaces have been closed by the suite); it must tolerate ifaces that are
// already closed.
type Pair struct {
	A, B     uct.Iface
	MDA, MDB uct.MD
	Cleanup  func()
}

// Factory opens a fresh Pair for one case. It should fail t (t.Fatal) if it
// cannot.
type Factory func(t testing.TB) *Pair

// Timeout bounds every wait of the suite: a condition that does not hold
// after Timeout of progress fails the case.
var Timeout = 10 * time.Second

// Run runs every conformance case as a subtest of t.
func Run(t *testing.T, f Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h *Harness)
	}{
		{"AMShort", testAMShort},
		{"AMBcopy", testAMBcopy},
		{"AMZcopy", testAMZcopy},
		{"AMIDs", testAMIDs},
		{"PutGet/Register", func(t *testing.T, h *Harness) { testPutGet(t, h, false) }},
		{"PutGet/Alloc", func(t *testing.T, h *Harness) { testPutGet(t, h, true) }},
		{"Atomic32", func(t *testing.T, h *Harness) { testAtomics(t, h, 4) }},
		{"Atomic64", func(t *testing.T, h *Harness) { testAtomics(t, h, 8) }},
		{"FlushOrdering", testFlushOrdering},
		{"IfaceFlush", testIfaceFlush},
		{"Fence", testFence},
		{"BackPressure", testBackPressure},
		{"Notify", testNotify},
		{"ArmWaitWake", testArmWaitWake},
		{"PeerClosed", testPeerClosed},
		{"PeerClosedIsolation", func(t *testing.T, h *Harness) { testPeerClosedIsolation(t, h, f) }},
		{"CloseInFlight/Iface", func(t *testing.T, h *Harness) { testCloseInFlight(t, h, false) }},
		{"CloseInFlight/Endpoint", func(t *testing.T, h *Harness) { testCloseInFlight(t, h, true) }},
		{"FlushCancel", testFlushCancel},
		{"UseAfterClose", testUseAfterClose},
		{"BadRKey", testBadRKey},
		{"ClosedMemKey", testClosedMemKey},
		{"BadRemoteAddress", testBadRemoteAddress},
		{"BadIfaceAddress", testBadIfaceAddress},
		{"ErrorHandler", testErrorHandler},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness(t, f)
			c.fn(t, h)
		})
	}
}

// Harness is one fresh Pair with an endpoint from A to B. The iface
// closes are registered with t.Cleanup.
type Harness struct {
	T     testing.TB
	P     *Pair
	AttrA uct.IfaceAttr
	AttrB uct.IfaceAttr
	EP    uct.Endpoint // A → B
}

// NewHarness opens a Pair with f and connects A to B.
func NewHarness(t testing.TB, f Factory) *Harness {
	t.Helper()
	p := f(t)
	if p == nil || p.A == nil || p.B == nil || p.MDA == nil || p.MDB == nil {
		t.Fatalf("factory returned an incomplete pair: %+v", p)
	}
	h := &Harness{T: t, P: p, AttrA: p.A.Attr(), AttrB: p.B.Attr()}
	t.Cleanup(func() {
		if h.EP != nil {
			_ = h.EP.Close()
		}
		_ = p.A.Close()
		_ = p.B.Close()
		if p.Cleanup != nil {
			p.Cleanup()
		}
	})
	ep, err := p.A.Connect(p.B.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		t.Fatalf("connect A to B: %v", err)
	}
	h.EP = ep
	return h
}

// NeedCap skips the test unless iface A announces every capability in c.
func (h *Harness) NeedCap(c uct.Cap, what string) {
	h.T.Helper()
	if !h.AttrA.Cap.Has(c) {
		h.T.Skipf("iface %s/%s lacks %s (cap %#x)", h.AttrA.Transport, h.AttrA.Device, what, uint64(c))
	}
}

// Progress runs one round of progress on both ifaces.
func (h *Harness) Progress() int {
	n := h.P.A.Progress()
	n += h.P.B.Progress()
	if n == 0 {
		runtime.Gosched()
	}
	return n
}

// Until progresses both ifaces until cond holds; it fails the test after
// Timeout.
func (h *Harness) Until(what string, cond func() bool) {
	h.T.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.T.Fatalf("%s: not done after %v of progress", what, Timeout)
		}
		h.Progress()
	}
}

// Op is a Completion that records how often it was invoked.
type Op struct {
	C     uct.Completion
	calls atomic.Int32
	mu    sync.Mutex
	err   error
}

// NewOp returns an Op whose Completion counts one operation.
func NewOp() *Op {
	o := &Op{}
	o.C.Count = 1
	o.C.Func = func(c *uct.Completion) {
		o.mu.Lock()
		o.err = c.Status
		o.mu.Unlock()
		o.calls.Add(1)
	}
	return o
}

// Done reports whether the completion has fired.
func (o *Op) Done() bool { return o.calls.Load() > 0 }

// Calls is the number of times the completion fired.
func (o *Op) Calls() int { return int(o.calls.Load()) }

// Err is the status the completion fired with.
func (o *Op) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Do posts an operation and waits for its result: it retries on
// ErrNoResource (progressing in between), waits for the completion on
// ErrInProgress, and returns the operation's final error.
func (h *Harness) Do(what string, post func(c *uct.Completion) error) error {
	h.T.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		o := NewOp()
		err := post(&o.C)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, uct.ErrNoResource):
			if time.Now().After(deadline) {
				h.T.Fatalf("%s: still no resource after %v", what, Timeout)
			}
			h.Progress()
			continue
		case errors.Is(err, uct.ErrInProgress) && !isOpFailure(err):
			h.Until(what+" completion", o.Done)
			if n := o.Calls(); n != 1 {
				h.T.Errorf("%s: completion invoked %d times", what, n)
			}
			return o.Err()
		default:
			return err
		}
	}
}

// isOpFailure is true for an *OpError whose status is not in-progress.
func isOpFailure(err error) bool {
	var oe *uct.OpError
	return errors.As(err, &oe) && oe.Status != uct.ErrInProgress
}

// Must is Do that fails the test on error.
func (h *Harness) Must(what string, post func(c *uct.Completion) error) {
	h.T.Helper()
	if err := h.Do(what, post); err != nil {
		h.T.Fatalf("%s: %v", what, err)
	}
}

// FlushEP flushes endpoint A→B and waits for it.
func (h *Harness) FlushEP() {
	h.T.Helper()
	h.Must("endpoint flush", func(c *uct.Completion) error { return h.EP.Flush(false, c) })
}

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

// pattern returns n bytes that depend on seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed + byte(i>>8)
	}
	return b
}

// recv collects active messages on B.
type recv struct {
	mu   sync.Mutex
	msgs [][]byte
	args []any
}

func (r *recv) handler(arg any, data []byte, _ uct.AMFlags) {
	r.mu.Lock()
	r.msgs = append(r.msgs, append([]byte(nil), data...))
	r.args = append(r.args, arg)
	r.mu.Unlock()
}

func (r *recv) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func (r *recv) get(i int) ([]byte, any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[i], r.args[i]
}

func (h *Harness) setAM(id uint8, arg any) *recv {
	h.T.Helper()
	r := &recv{}
	if err := h.P.B.SetAMHandler(id, r.handler, arg); err != nil {
		h.T.Fatalf("SetAMHandler(%d): %v", id, err)
	}
	return r
}

func sizesUpTo(max int) []int {
	var s []int
	for _, n := range []int{0, 1, 7, 8, 63, 64, 255, 1000, 4096, 65536, 1 << 20} {
		if n < max {
			s = append(s, n)
		}
	}
	if max >= 0 {
		s = append(s, max)
	}
	return s
}

type amArg struct{ name string }

func testAMShort(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMShort, "AM short")
	arg := &amArg{"short"}
	r := h.setAM(3, arg)
	sizes := sizesUpTo(h.AttrA.AMMaxShort)
	for i, n := range sizes {
		hdr := uint64(0x1122334455667700) + uint64(i)
		p := pattern(n, byte(i))
		h.Must(fmt.Sprintf("AMShort %d bytes", n), func(*uct.Completion) error { return h.EP.AMShort(3, hdr, p) })
		h.Until(fmt.Sprintf("AMShort %d bytes arrives", n), func() bool { return r.n() > i })
		got, a := r.get(i)
		if a != arg {
			t.Errorf("AMShort %d: handler arg %v, want %v", n, a, arg)
		}
		if len(got) != 8+n {
			t.Fatalf("AMShort %d: handler got %d bytes, want 8+%d", n, len(got), n)
		}
		if g := binary.LittleEndian.Uint64(got); g != hdr {
			t.Errorf("AMShort %d: header %#x, want %#x", n, g, hdr)
		}
		if !bytes.Equal(got[8:], p) {
			t.Errorf("AMShort %d: payload differs", n)
		}
	}
	if h.AttrA.AMMaxShort >= 0 {
		big := make([]byte, h.AttrA.AMMaxShort+1)
		err := h.EP.AMShort(3, 0, big)
		if err == nil || errors.Is(err, uct.ErrInProgress) || errors.Is(err, uct.ErrNoResource) {
			t.Errorf("AMShort over AMMaxShort (%d): %v, want an error wrapping ErrInvalidParam", len(big), err)
		} else if !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("AMShort over AMMaxShort: %v does not wrap ErrInvalidParam", err)
		}
	}
}

func testAMBcopy(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	arg := &amArg{"bcopy"}
	r := h.setAM(4, arg)
	max := h.AttrA.AMMaxBcopy
	i := 0
	for _, hl := range []int{0, 8} {
		for _, n := range sizesUpTo(max - hl) {
			hdr := pattern(hl, 0x40+byte(i))
			p := pattern(n, byte(i))
			var sent int
			h.Must(fmt.Sprintf("AMBcopy %d+%d bytes", hl, n), func(*uct.Completion) error {
				var err error
				sent, err = h.EP.AMBcopy(4, hdr, p)
				return err
			})
			if sent != hl+n {
				t.Errorf("AMBcopy %d+%d: returned length %d", hl, n, sent)
			}
			k := i
			h.Until(fmt.Sprintf("AMBcopy %d+%d arrives", hl, n), func() bool { return r.n() > k })
			got, a := r.get(i)
			if a != arg {
				t.Errorf("AMBcopy: handler arg %v, want %v", a, arg)
			}
			if want := append(append([]byte{}, hdr...), p...); !bytes.Equal(got, want) {
				t.Errorf("AMBcopy %d+%d: got %d bytes, content differs", hl, n, len(got))
			}
			i++
		}
	}
	if max >= 0 {
		_, err := h.EP.AMBcopy(4, nil, make([]byte, max+1))
		if !errors.Is(err, uct.ErrInvalidParam) || errors.Is(err, uct.ErrInProgress) {
			t.Errorf("AMBcopy over AMMaxBcopy (%d): %v, want an error wrapping ErrInvalidParam", max+1, err)
		}
	}
}

func testAMZcopy(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMZcopy, "AM zcopy")
	arg := &amArg{"zcopy"}
	r := h.setAM(5, arg)
	maxIOV := h.AttrA.AMMaxIOV
	if maxIOV < 1 {
		maxIOV = 1
	}
	hl := min(h.AttrA.AMMaxHeader, 16)
	i := 0
	for _, n := range sizesUpTo(h.AttrA.AMMaxZcopy - hl) {
		hdr := pattern(hl, 0x80+byte(i))
		p := pattern(n, byte(i))
		// split the payload into up to 3 parts, within AMMaxIOV
		parts := min(3, maxIOV)
		var iov [][]byte
		for j := 0; j < parts; j++ {
			iov = append(iov, p[j*n/parts:(j+1)*n/parts])
		}
		h.Must(fmt.Sprintf("AMZcopy %d+%d bytes", hl, n), func(c *uct.Completion) error {
			return h.EP.AMZcopy(5, hdr, iov, c)
		})
		k := i
		h.Until(fmt.Sprintf("AMZcopy %d+%d arrives", hl, n), func() bool { return r.n() > k })
		got, a := r.get(i)
		if a != arg {
			t.Errorf("AMZcopy: handler arg %v, want %v", a, arg)
		}
		if want := append(append([]byte{}, hdr...), p...); !bytes.Equal(got, want) {
			t.Errorf("AMZcopy %d+%d: got %d bytes, content differs", hl, n, len(got))
		}
		i++
	}
}

func testAMIDs(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	ids := []uint8{0, 1, 17, uct.MaxAMID}
	rs := map[uint8]*recv{}
	for _, id := range ids {
		rs[id] = h.setAM(id, id)
	}
	for _, id := range ids {
		h.Must("AMBcopy", func(*uct.Completion) error {
			_, err := h.EP.AMBcopy(id, []byte{id}, nil)
			return err
		})
	}
	h.Until("one message per AM id", func() bool {
		for _, id := range ids {
			if rs[id].n() < 1 {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if rs[id].n() != 1 {
			t.Errorf("AM id %d: %d messages, want 1", id, rs[id].n())
			continue
		}
		got, a := rs[id].get(0)
		if a != id || !bytes.Equal(got, []byte{id}) {
			t.Errorf("AM id %d: got %v with arg %v", id, got, a)
		}
	}
	if err := h.P.B.SetAMHandler(uct.MaxAMID+1, func(any, []byte, uct.AMFlags) {}, nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("SetAMHandler(MaxAMID+1) = %v, want ErrInvalidParam", err)
	}
	// Removing a handler: messages to its id must no longer reach it.
	if err := h.P.B.SetAMHandler(1, nil, nil); err != nil {
		t.Fatalf("SetAMHandler(1, nil): %v", err)
	}
	if err := h.P.B.SetAMHandler(1, rs[17].handler, "again"); err != nil {
		t.Fatalf("SetAMHandler(1, again): %v", err)
	}
	h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(1, []byte{99}, nil); return err })
	h.Until("message to the replaced handler", func() bool { return rs[17].n() == 2 })
	if _, a := rs[17].get(1); a != "again" {
		t.Errorf("replaced handler got arg %v", a)
	}
	if rs[1].n() != 1 {
		t.Errorf("removed handler got %d messages, want 1", rs[1].n())
	}
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

// postNoWait posts without waiting for the completion (retrying on
// no-resource); it returns the Op, done or not.
func (h *Harness) postNoWait(what string, post func(c *uct.Completion) error) *Op {
	h.T.Helper()
	deadline := time.Now().Add(Timeout)
	for {
		o := NewOp()
		err := post(&o.C)
		switch {
		case err == nil:
			o.calls.Store(1) // done locally; the completion will not fire
			return o
		case errors.Is(err, uct.ErrNoResource):
			if time.Now().After(deadline) {
				h.T.Fatalf("%s: still no resource after %v", what, Timeout)
			}
			h.Progress()
		case errors.Is(err, uct.ErrInProgress) && !isOpFailure(err):
			return o
		default:
			h.T.Fatalf("%s: %v", what, err)
		}
	}
}

func testFlushOrdering(t *testing.T, h *Harness) {
	if !h.AttrA.Cap.Has(uct.CapPutZcopy) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutShort) {
		t.Skip("iface has no put")
	}
	const chunk, count = 4096, 64
	rm := h.RemoteMemory(chunk*count, !h.P.MDB.Attr().CanRegister)
	srcs := make([][]byte, count)
	var ops []*Op
	for i := range srcs {
		n := chunk
		if h.AttrA.Cap.Has(uct.CapPutZcopy) {
			n = min(n, h.AttrA.PutMaxZcopy)
		} else if h.AttrA.Cap.Has(uct.CapPutBcopy) {
			n = min(n, h.AttrA.PutMaxBcopy)
		} else {
			n = min(n, h.AttrA.PutMaxShort)
		}
		srcs[i] = pattern(n, byte(i+1))
		raddr := rm.Mem.Address() + uint64(i*chunk)
		ops = append(ops, h.postNoWait("put", func(c *uct.Completion) error { return h.putAny(srcs[i], raddr, rm.RKey, c) }))
	}
	// Flush without waiting for the puts' own completions first.
	fl := NewOp()
	err := h.EP.Flush(false, &fl.C)
	for errors.Is(err, uct.ErrNoResource) {
		h.Progress()
		fl = NewOp()
		err = h.EP.Flush(false, &fl.C)
	}
	switch {
	case err == nil:
	case errors.Is(err, uct.ErrInProgress):
		h.Until("flush", fl.Done)
		if fl.Err() != nil {
			t.Fatalf("flush completed with %v", fl.Err())
		}
	default:
		t.Fatalf("flush: %v", err)
	}
	for i, o := range ops {
		if !o.Done() {
			t.Errorf("put %d: completion not invoked when flush completed", i)
		} else if o.Err() != nil {
			t.Errorf("put %d: %v", i, o.Err())
		}
		if !bytes.Equal(rm.Buf[i*chunk:i*chunk+len(srcs[i])], srcs[i]) {
			t.Errorf("put %d: not visible at the target after flush", i)
		}
	}
}

func testIfaceFlush(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	r := h.setAM(6, nil)
	for i := 0; i < 16; i++ {
		h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(6, []byte{byte(i)}, nil); return err })
	}
	h.Must("iface flush", func(c *uct.Completion) error { return h.P.A.Flush(c) })
	h.Until("all messages", func() bool { return r.n() == 16 })
	for i := 0; i < 16; i++ {
		if got, _ := r.get(i); !bytes.Equal(got, []byte{byte(i)}) {
			t.Errorf("message %d: %v (AMs on one endpoint arrive in order)", i, got)
		}
	}
}

func testFence(t *testing.T, h *Harness) {
	if !h.AttrA.Cap.Has(uct.CapPutShort) && !h.AttrA.Cap.Has(uct.CapPutBcopy) && !h.AttrA.Cap.Has(uct.CapPutZcopy) {
		t.Skip("iface has no put")
	}
	rm := h.RemoteMemory(4096, !h.P.MDB.Attr().CanRegister)
	raddr := rm.Mem.Address()
	for i := 1; i <= 20; i++ {
		v := pattern(8, byte(i))
		h.postNoWait("put", func(c *uct.Completion) error { return h.putAny(v, raddr, rm.RKey, c) })
		if err := h.EP.Fence(); err != nil {
			t.Fatalf("endpoint Fence: %v", err)
		}
		if err := h.P.A.Fence(); err != nil {
			t.Fatalf("iface Fence: %v", err)
		}
	}
	h.FlushEP()
	if !bytes.Equal(rm.Buf[:8], pattern(8, 20)) {
		t.Errorf("after fenced puts the last one must win: %x, want %x", rm.Buf[:8], pattern(8, 20))
	}
}

type pendingAM struct {
	h          *Harness
	id         uint8
	seq        byte
	dispatched int
}

func (p *pendingAM) Dispatch() error {
	p.dispatched++
	_, err := p.h.EP.AMBcopy(p.id, []byte{p.seq}, nil)
	return err
}

func testBackPressure(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy|uct.CapPending, "AM bcopy and pending")
	r := h.setAM(7, nil)
	// Without progress on B, the sender must run out of room.
	sent := 0
	const limit = 1 << 20
	var err error
	for sent < limit {
		if _, err = h.EP.AMBcopy(7, []byte{byte(sent)}, nil); err != nil {
			break
		}
		sent++
	}
	if err == nil {
		t.Skipf("no back-pressure after %d messages without progress", limit)
	}
	if !errors.Is(err, uct.ErrNoResource) {
		t.Fatalf("AMBcopy after %d messages: %v, want ErrNoResource", sent, err)
	}
	// Queue one request per missing slot: they must be dispatched in order
	// as progress frees room.
	var reqs []*pendingAM
	for i := 0; i < 4; i++ {
		p := &pendingAM{h: h, id: 7, seq: byte(sent + i)}
		if err := h.EP.PendingAdd(p); err != nil {
			t.Fatalf("PendingAdd while out of resources: %v", err)
		}
		reqs = append(reqs, p)
	}
	total := sent + len(reqs)
	h.Until("pending requests dispatched and all messages received", func() bool { return r.n() == total })
	for i := 0; i < total; i++ {
		if got, _ := r.get(i); len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("message %d: %v, want [%d] (pending requests go after what was sent)", i, got, byte(i))
		}
	}
	for i, p := range reqs {
		if p.dispatched < 1 {
			t.Errorf("pending request %d: never dispatched", i)
		}
	}
	// Room again: PendingAdd must refuse with ErrBusy.
	h.Until("room to send", func() bool {
		err := h.EP.PendingAdd(&pendingAM{h: h, id: 7})
		if err == nil {
			t.Fatal("PendingAdd with room: queued, want ErrBusy")
		}
		return errors.Is(err, uct.ErrBusy)
	})
	// PendingPurge hands back nothing now.
	h.EP.PendingPurge(func(uct.PendingRequest) { t.Error("PendingPurge returned a request on an empty queue") })
}

func testPeerClosed(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapCheckLiveness, "liveness check")
	// Alive first.
	h.Must("CheckLiveness (alive)", func(c *uct.Completion) error { return h.EP.CheckLiveness(c) })
	if err := h.EP.Err(); err != nil {
		t.Fatalf("healthy endpoint has Err %v", err)
	}
	type handlerArg struct{ name string }
	arg := &handlerArg{"peer-closed"}
	var (
		hmu   sync.Mutex
		hargs []any
		heps  []uct.Endpoint
		herrs []error
	)
	h.P.A.SetErrorHandler(func(a any, ep uct.Endpoint, err error) {
		hmu.Lock()
		hargs, heps, herrs = append(hargs, a), append(heps, ep), append(herrs, err)
		hmu.Unlock()
	}, arg)
	if err := h.P.B.Close(); err != nil {
		t.Errorf("close B: %v", err)
	}
	defer func() {
		// If the error handler was told, it got its own arg, this endpoint
		// (or nil for an iface-wide error) and a non-nil error.
		hmu.Lock()
		defer hmu.Unlock()
		for i := range hargs {
			if hargs[i] != arg {
				t.Errorf("error handler got arg %v, want the one given to SetErrorHandler", hargs[i])
			}
			if heps[i] != nil && heps[i] != h.EP {
				t.Errorf("error handler got endpoint %v, want %v or nil", heps[i].Peer(), h.EP.Peer())
			}
			if herrs[i] == nil {
				t.Error("error handler called with a nil error")
			}
		}
		t.Logf("error handler called %d times", len(hargs))
		// Events posted about the failure are acked so Close does not wait.
		for {
			ev, ok := h.P.A.Events().TryGet()
			if !ok {
				break
			}
			t.Logf("event: %v", ev)
			ev.Ack()
		}
	}()
	// Contract: after the peer iface is closed, CheckLiveness completes
	// (synchronously or through its completion) with an endpoint-fatal
	// error, the endpoint then reports that error in Err, and new
	// operations fail fast with an endpoint-fatal status.
	err := h.Do("CheckLiveness (peer closed)", func(c *uct.Completion) error { return h.EP.CheckLiveness(c) })
	if err == nil {
		t.Fatal("CheckLiveness after the peer iface closed: nil, want an error")
	}
	if !uct.StatusOf(err).IsEndpointFatal() {
		t.Errorf("CheckLiveness after peer close: %v (status %q, remedy %v) is not endpoint-fatal", err, uct.StatusOf(err), uct.RemedyOf(err))
	}
	if e := h.EP.Err(); e == nil || !uct.StatusOf(e).IsEndpointFatal() {
		t.Errorf("endpoint Err after failed liveness: %v, want an endpoint-fatal error", e)
	}
	if h.AttrA.Cap.Has(uct.CapAMBcopy) {
		_, err := h.EP.AMBcopy(1, []byte{1}, nil)
		if err == nil || errors.Is(err, uct.ErrNoResource) || errors.Is(err, uct.ErrInProgress) {
			t.Errorf("AMBcopy on a failed endpoint: %v, want a fast endpoint-fatal error", err)
		} else if !uct.StatusOf(err).IsEndpointFatal() {
			t.Errorf("AMBcopy on a failed endpoint: %v is not endpoint-fatal", err)
		}
		var oe *uct.OpError
		if err != nil && !errors.As(err, &oe) {
			t.Errorf("AMBcopy on a failed endpoint: %T %v is not an *uct.OpError", err, err)
		}
	}
}

func testCloseInFlight(t *testing.T, h *Harness, endpoint bool) {
	if !h.AttrA.Cap.Has(uct.CapPutZcopy) && !h.AttrA.Cap.Has(uct.CapAMZcopy) {
		t.Skip("iface has neither put nor AM zcopy")
	}
	var rm *RemoteMem
	if h.AttrA.Cap.Has(uct.CapPutZcopy) {
		rm = h.RemoteMemory(1<<20, !h.P.MDB.Attr().CanRegister)
	} else {
		h.setAM(9, nil)
	}
	var ops []*Op
	buf := pattern(min(64<<10, max(h.AttrA.PutMaxZcopy, h.AttrA.AMMaxZcopy-h.AttrA.AMMaxHeader)), 3)
	for i := 0; i < 64; i++ {
		o := NewOp()
		var err error
		if rm != nil {
			n := min(len(buf), h.AttrA.PutMaxZcopy)
			err = h.EP.PutZcopy([][]byte{buf[:n]}, rm.Mem.Address()+uint64(i*n%(1<<20-n+1)), rm.RKey, &o.C)
		} else {
			err = h.EP.AMZcopy(9, nil, [][]byte{buf[:min(len(buf), h.AttrA.AMMaxZcopy)]}, &o.C)
		}
		switch {
		case err == nil:
		case errors.Is(err, uct.ErrInProgress):
			ops = append(ops, o)
		case errors.Is(err, uct.ErrNoResource):
		default:
			t.Fatalf("post %d: %v", i, err)
		}
	}
	t.Logf("%d operations in flight at close", len(ops))
	done := make(chan error, 1)
	go func() {
		if endpoint {
			done <- h.EP.Close()
		} else {
			done <- h.P.A.Close()
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(Timeout):
		t.Fatalf("close with %d operations in flight did not return within %v", len(ops), Timeout)
	}
	if endpoint {
		// Completions may be delivered by the iface's progress.
		h.Until("completions after endpoint close", func() bool { return allDone(ops) })
	}
	checkOnceCanceled(t, ops)
	// Nothing more fires later.
	for i := 0; i < 100; i++ {
		if !endpoint {
			h.P.B.Progress()
		} else {
			h.Progress()
		}
	}
	for i, o := range ops {
		if n := o.Calls(); n > 1 {
			t.Errorf("operation %d: completion invoked %d times", i, n)
		}
	}
	if endpoint {
		if err := h.EP.Close(); err != nil {
			t.Errorf("second endpoint Close: %v", err)
		}
	} else {
		if err := h.P.A.Close(); err != nil {
			t.Errorf("second iface Close: %v", err)
		}
	}
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

func testBadIfaceAddress(t *testing.T, h *Harness) {
	good := h.P.B.Address()
	bad := [][]byte{nil, {}, {0}, bytes.Repeat([]byte{0xee}, len(good)), good[:len(good)/2]}
	flipped := append([]byte(nil), good...)
	if len(flipped) > 0 {
		flipped[0] ^= 0xff
		bad = append(bad, flipped)
	}
	for _, a := range bad {
		ep, err := h.P.A.Connect(a, uct.EPParams{Timeout: time.Second})
		if err == nil {
			_ = ep.Close()
			t.Errorf("Connect(%x) succeeded", a)
			continue
		}
		if !errors.Is(err, uct.ErrInvalidAddress) && !errors.Is(err, uct.ErrUnreachable) {
			t.Errorf("Connect(%x): %v, want an error wrapping ErrInvalidAddress or ErrUnreachable", a, err)
		}
	}
}

func testErrorHandler(t *testing.T, h *Harness) {
	// SetErrorHandler with nil restores the default; both calls must be
	// accepted on an open iface. Delivery is exercised by transports'
	// fault tests.
	type key struct{}
	h.P.A.SetErrorHandler(func(any, uct.Endpoint, error) {}, key{})
	h.P.A.SetErrorHandler(nil, nil)
	if h.P.A.Events() == nil {
		t.Error("Iface.Events() is nil")
	}
	w, err := h.P.A.WatchDevice(func(uct.DeviceStatusEvent) {})
	if err != nil {
		t.Fatalf("WatchDevice: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Watch.Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Watch.Close: %v", err)
	}
	if _, err := h.P.A.WatchDevice(nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("WatchDevice(nil) = %v, want ErrInvalidParam", err)
	}
}

func testArmWaitWake(t *testing.T, h *Harness) {
	// Wake makes a concurrent Wait return (before its context ends).
	if err := h.P.A.Arm(); err != nil && !errors.Is(err, uct.ErrBusy) {
		t.Fatalf("Arm: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.P.A.Wait(ctx) }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
wake:
	for {
		h.P.A.Wake()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait woken by Wake returned %v", err)
			}
			break wake
		case <-tick.C:
		}
	}

	// An armed iface is woken by an incoming message; Arm refuses to arm
	// (ErrBusy) while one is waiting.
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	if !h.AttrB.Cap.Has(uct.CapEventRecv) {
		t.Skip("iface lacks CapEventRecv: receives do not wake Wait")
	}
	r := h.setAM(10, nil)
	for i := 0; i < 100; i++ {
		h.Progress()
	}
	h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(10, []byte{42}, nil); return err })
	for i := 0; ; i++ {
		h.P.A.Progress() // the sender may need progress to push the message out
		err := h.P.B.Arm()
		if errors.Is(err, uct.ErrBusy) {
			break
		}
		if err != nil {
			t.Fatalf("Arm: %v", err)
		}
		wctx, wcancel := context.WithTimeout(ctx, Timeout)
		err = h.P.B.Wait(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("armed iface with a message on its way: Wait returned %v", err)
		}
		if i > 1000 {
			t.Fatal("Arm never reported the waiting message (ErrBusy)")
		}
		if h.P.B.Progress() > 0 {
			break
		}
	}
	h.Until("message after wake-up", func() bool { return r.n() == 1 })
}

func testFlushCancel(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapPutZcopy, "put zcopy")
	const n = 4096
	rm := h.RemoteMemory(64*n, !h.P.MDB.Attr().CanRegister)
	buf := pattern(min(n, h.AttrA.PutMaxZcopy), 5)
	var ops []*Op
	for i := 0; i < 64; i++ {
		o := NewOp()
		err := h.EP.PutZcopy([][]byte{buf}, rm.Mem.Address()+uint64(i*n), rm.RKey, &o.C)
		switch {
		case err == nil:
		case errors.Is(err, uct.ErrInProgress):
			ops = append(ops, o)
		case errors.Is(err, uct.ErrNoResource):
		default:
			t.Fatalf("put %d: %v", i, err)
		}
	}
	// Flush with cancel: every outstanding operation completes exactly
	// once, with nil (it had finished) or ErrCanceled, and so does the flush.
	err := h.Do("flush(cancel)", func(c *uct.Completion) error { return h.EP.Flush(true, c) })
	if err != nil && !errors.Is(err, uct.ErrCanceled) {
		t.Errorf("flush(cancel): %v, want nil or ErrCanceled", err)
	}
	h.Until("canceled operations complete", func() bool { return allDone(ops) })
	checkOnceCanceled(t, ops)
}

func testUseAfterClose(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	if err := h.EP.Close(); err != nil {
		t.Fatalf("endpoint Close: %v", err)
	}
	if err := h.EP.Close(); err != nil {
		t.Errorf("second endpoint Close: %v", err)
	}
	_, err := h.EP.AMBcopy(1, []byte{1}, nil)
	if err == nil || errors.Is(err, uct.ErrNoResource) || errors.Is(err, uct.ErrInProgress) {
		t.Errorf("AMBcopy on a closed endpoint: %v, want an error", err)
	}
	// The iface still works: a new endpoint to the same peer.
	ep, err := h.P.A.Connect(h.P.B.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		t.Fatalf("reconnect after endpoint close: %v", err)
	}
	defer ep.Close()
	r := h.setAM(11, nil)
	h.Must("AMBcopy on the new endpoint", func(*uct.Completion) error { _, err := ep.AMBcopy(11, []byte{7}, nil); return err })
	h.Until("message on the new endpoint", func() bool { return r.n() == 1 })
	if err := h.P.A.Close(); err != nil {
		t.Errorf("iface Close: %v", err)
	}
	if err := h.P.A.Close(); err != nil {
		t.Errorf("second iface Close: %v", err)
	}
	if _, err := ep.AMBcopy(11, []byte{8}, nil); err == nil || errors.Is(err, uct.ErrNoResource) {
		t.Errorf("AMBcopy after its iface closed: %v, want an error", err)
	}
}

// testPeerClosedIsolation: when one peer fails, endpoints of the same iface
// to other peers keep working.
func testPeerClosedIsolation(t *testing.T, h *Harness, f Factory) {
	h.NeedCap(uct.CapCheckLiveness|uct.CapAMBcopy, "liveness check and AM bcopy")
	other := f(t)
	t.Cleanup(func() {
		_ = other.A.Close()
		_ = other.B.Close()
		if other.Cleanup != nil {
			other.Cleanup()
		}
	})
	ep2, err := h.P.A.Connect(other.B.Address(), uct.EPParams{Timeout: Timeout})
	if err != nil {
		t.Fatalf("connect A to a second peer: %v", err)
	}
	defer ep2.Close()
	got := 0
	if err := other.B.SetAMHandler(12, func(any, []byte, uct.AMFlags) { got++ }, nil); err != nil {
		t.Fatal(err)
	}
	h.P.A.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	if err := h.P.B.Close(); err != nil {
		t.Errorf("close B: %v", err)
	}
	if err := h.Do("CheckLiveness (peer closed)", func(c *uct.Completion) error { return h.EP.CheckLiveness(c) }); err == nil {
		t.Fatal("CheckLiveness after the peer iface closed: nil, want an error")
	}
	until := func(what string, cond func() bool) {
		deadline := time.Now().Add(Timeout)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not done after %v", what, Timeout)
			}
			h.P.A.Progress()
			other.B.Progress()
		}
	}
	if err := ep2.Err(); err != nil {
		t.Fatalf("endpoint to the healthy peer is in error: %v", err)
	}
	for i := 0; i < 4; i++ {
		deadline := time.Now().Add(Timeout)
		for {
			_, err := ep2.AMBcopy(12, []byte{byte(i)}, nil)
			if err == nil {
				break
			}
			if !errors.Is(err, uct.ErrNoResource) || time.Now().After(deadline) {
				t.Fatalf("AMBcopy to the healthy peer: %v", err)
			}
			h.P.A.Progress()
			other.B.Progress()
		}
	}
	until("messages to the healthy peer", func() bool { return got == 4 })
	lv := NewOp()
	switch err := ep2.CheckLiveness(&lv.C); {
	case err == nil:
	case errors.Is(err, uct.ErrInProgress):
		until("liveness of the healthy peer", lv.Done)
		if lv.Err() != nil {
			t.Errorf("CheckLiveness of the healthy peer: %v", lv.Err())
		}
	default:
		t.Errorf("CheckLiveness of the healthy peer: %v", err)
	}
	for {
		ev, ok := h.P.A.Events().TryGet()
		if !ok {
			break
		}
		ev.Ack()
	}
}

// allDone reports whether every op's completion has been invoked.
func allDone(ops []*Op) bool {
	for _, o := range ops {
		if !o.Done() {
			return false
		}
	}
	return true
}

// checkOnceCanceled requires each op to have completed exactly once, with
// nil or ErrCanceled.
func checkOnceCanceled(t *testing.T, ops []*Op) {
	t.Helper()
	for i, o := range ops {
		if n := o.Calls(); n != 1 {
			t.Errorf("operation %d: completion invoked %d times, want exactly once", i, n)
		} else if err := o.Err(); err != nil && !errors.Is(err, uct.ErrCanceled) {
			t.Errorf("operation %d: completed with %v, want nil or ErrCanceled", i, err)
		}
	}
}
