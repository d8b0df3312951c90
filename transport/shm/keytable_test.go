package shm

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// keyRig is an initiator endpoint and a target MD in this process, with a
// read-write and a read-only registration inside one arena whose guard
// bytes no put may reach.
type keyRig struct {
	mdB    uct.MD
	ep     uct.Endpoint
	arena  []byte
	rw, ro uct.Mem
}

const (
	forgeGuard = 64
	forgeLen   = 4096
)

func newKeyRig(t *testing.T) *keyRig {
	t.Helper()
	_, a := openIface(t)
	mdB, b := openIface(t)
	ep, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	r := &keyRig{mdB: mdB, ep: ep, arena: make([]byte, 3*forgeGuard+2*forgeLen)}
	for i := range r.arena {
		r.arena[i] = byte(i*13 + 1)
	}
	if r.rw, err = mdB.Register(r.arena[forgeGuard:forgeGuard+forgeLen], uct.AccessAll); err != nil {
		t.Fatal(err)
	}
	roOff := 2*forgeGuard + forgeLen
	if r.ro, err = mdB.Register(r.arena[roOff:roOff+forgeLen], uct.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.rw.Close(); r.ro.Close() })
	return r
}

// protected returns the arena bytes no put may change: the guards and the
// read-only region (the read-write region is zeroed in the copy).
func (r *keyRig) protected() []byte {
	p := append([]byte(nil), r.arena...)
	clear(p[forgeGuard : forgeGuard+forgeLen])
	return p
}

// mutations returns the edits tried on one key byte.
func mutations(b byte) []byte {
	return []byte{b ^ 0xff, b + 1, b - 1, b + 0x10, b - 0x10, b + 0x40, b - 0x40, b ^ 0x80, 0, 0xff}
}

// Every single-byte edit of a key, used for puts just outside, across
// and inside its region: nothing outside a registration with write rights
// changes, and a put that leaves the region never returns OK.
func TestKeyForgeryShm(t *testing.T) {
	r := newKeyRig(t)
	want := r.protected()
	src := bytes.Repeat([]byte{0xee}, forgeLen+64)
	accepted, refused := 0, 0
	for _, m := range []struct {
		name string
		mem  uct.Mem
		ro   bool
	}{{"rw", r.rw, false}, {"ro", r.ro, true}} {
		key := m.mem.PackRKey()
		base, n := m.mem.Address(), uint64(forgeLen)
		attempts := []struct {
			raddr  uint64
			len    int
			inside bool
		}{
			{base - 16, 16, false},
			{base - 1, 1, false},
			{base + n, 16, false},
			{base + n - 8, 16, false},
			{base - 16, forgeLen + 32, false},
			{base, forgeLen, true},
		}
		for i := range key {
			for _, v := range mutations(key[i]) {
				forged := append([]byte(nil), key...)
				forged[i] = v
				if bytes.Equal(forged, key) {
					continue
				}
				rk, err := r.mdB.UnpackRKey(forged)
				if err != nil {
					refused++
					continue
				}
				for _, at := range attempts {
					err := r.ep.PutZcopy([][]byte{src[:at.len]}, at.raddr, rk, nil)
					what := fmt.Sprintf("%s key byte %d %#x->%#x, put [%#x,+%d)", m.name, i, key[i], v, at.raddr, at.len)
					if err == nil {
						if !at.inside || m.ro {
							t.Errorf("%s: returned OK", what)
						}
						accepted++
					} else if !errors.Is(err, uct.ErrRemoteProtection) {
						t.Errorf("%s: %v, want ErrRemoteProtection", what, err)
					}
					if got := r.protected(); !bytes.Equal(got, want) {
						t.Fatalf("%s: bytes outside the writable registration changed", what)
					}
				}
				rk.Close()
			}
		}
	}
	t.Logf("%d forged keys refused at unpack, %d in-region puts with harmless edits accepted", refused, accepted)
	// The genuine key still works.
	rk, err := r.mdB.UnpackRKey(r.rw.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	if err := r.ep.PutZcopy([][]byte{src[:forgeLen]}, r.rw.Address(), rk, nil); err != nil {
		t.Fatalf("put with the genuine key: %v", err)
	}
	if !bytes.Equal(r.arena[forgeGuard:forgeGuard+forgeLen], src[:forgeLen]) {
		t.Fatal("put with the genuine key did not land")
	}
}

// A key whose memory was deregistered, or whose slot now holds another
// registration, gets ErrRemoteProtection; the new registration's key works.
func TestKeyDeregisteredShm(t *testing.T) {
	r := newKeyRig(t)
	buf := make([]byte, 256)
	m1, err := r.mdB.Register(buf, uct.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	old := m1.PackRKey()
	rk, err := r.mdB.UnpackRKey(old)
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	if err := r.ep.PutShort([]byte{1, 2, 3}, m1.Address(), rk); err != nil {
		t.Fatalf("put before deregistration: %v", err)
	}
	m1.Close()
	if err := r.ep.PutShort([]byte{4}, m1.Address(), rk); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("put after deregistration: %v, want ErrRemoteProtection", err)
	}
	m2, err := r.mdB.Register(buf, uct.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := r.ep.PutShort([]byte{5}, m2.Address(), rk); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("put with the old key after re-registration: %v, want ErrRemoteProtection", err)
	}
	rk2, err := r.mdB.UnpackRKey(m2.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk2.Close()
	if err := r.ep.PutShort([]byte{6}, m2.Address(), rk2); err != nil || buf[0] != 6 {
		t.Fatalf("put with the new key: %v (byte %d)", err, buf[0])
	}
	// Allocated memory: the key stops working once the memory is freed.
	am, err := r.mdB.Alloc(4096, uct.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	ak, err := r.mdB.UnpackRKey(am.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer ak.Close()
	if err := r.ep.PutShort([]byte{7}, am.Address()+4088, ak); err != nil {
		t.Fatalf("put to allocated memory: %v", err)
	}
	if err := r.ep.PutShort([]byte{7, 7}, am.Address()+4095, ak); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("put past allocated memory: %v, want ErrRemoteProtection", err)
	}
	am.Close()
	if err := r.ep.PutShort([]byte{8}, am.Address(), ak); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("put after free: %v, want ErrRemoteProtection", err)
	}
}

// Registered memory stays alive while registered, whoever else drops it,
// and becomes collectable when the Mem is closed.
func TestRegisteredMemoryKeptAlive(t *testing.T) {
	md, _ := openIface(t)
	collected := make(chan struct{}, 1)
	reg := func() uct.Mem {
		buf := make([]byte, 1<<16)
		runtime.AddCleanup(&buf[0], func(ch chan struct{}) { ch <- struct{}{} }, collected)
		m, err := md.Register(buf, uct.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := reg()
	// Only the handle stays: the MD must keep the memory.
	h := fmt.Sprint(m.Address())
	m = nil
	for range 5 {
		runtime.GC()
		select {
		case <-collected:
			t.Fatalf("registered buffer %s collected before deregistration", h)
		case <-time.After(20 * time.Millisecond):
		}
	}
	m2 := reg()
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m2 = nil
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-collected:
			done = true
		case <-deadline:
			t.Fatal("deregistered buffer never collected")
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = m
	_ = m2
}

func FuzzUnpackRKey(f *testing.F) {
	md, err := New().OpenMD(uct.MDParams{})
	if err != nil {
		f.Fatal(err)
	}
	defer md.Close()
	m, err := md.Register(make([]byte, 64), uct.AccessAll)
	if err != nil {
		f.Fatal(err)
	}
	defer m.Close()
	f.Add(m.PackRKey())
	f.Add([]byte{})
	f.Add(make([]byte, rkeyLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		rk, err := md.UnpackRKey(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			return
		}
		k := rk.(*RKey)
		if k.slot < 0 || k.slot >= keySlots || k.gen == 0 || k.pid <= 0 {
			t.Fatalf("accepted key %+v", k)
		}
		rk.Close()
	})
}

func FuzzKeyTableHeader(f *testing.F) {
	good := make([]byte, ktHdr)
	ktInit(good, 42)
	f.Add(good, uint64(42))
	f.Add(good, uint64(41))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, hdr []byte, cookie uint64) {
		tab := make([]byte, ktLen)
		copy(tab, hdr)
		if err := ktCheck(tab, cookie); err != nil && !errors.Is(err, uct.ErrRemoteProtection) {
			t.Fatalf("error %v does not wrap ErrRemoteProtection", err)
		}
		if err := ktCheck(hdr, cookie); err == nil && len(hdr) < ktLen {
			t.Fatal("accepted a short table")
		}
	})
}
