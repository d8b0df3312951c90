package rc

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// rcPut puts src at raddr with rk over ep and waits (bounded) for its
// completion, progressing both ifaces.
func rcPut(t *testing.T, a, b *Iface, ep uct.Endpoint, src []byte, raddr uint64, rk uct.RKey) error {
	t.Helper()
	done := false
	comp := &uct.Completion{Count: 1, Func: func(*uct.Completion) { done = true }}
	err := ep.PutZcopy([][]byte{src}, raddr, rk, comp)
	if !errors.Is(err, uct.ErrInProgress) {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !done {
		a.Progress()
		b.Progress()
		if time.Now().After(deadline) {
			t.Fatalf("put [%#x,+%d) did not complete", raddr, len(src))
		}
	}
	return comp.Status
}

// Every single-byte edit of an rc key, used for puts just outside its
// region (and, for a read-only region, inside it): the target refuses
// each with a remote access error, and nothing outside a registration
// with write rights changes.
func TestKeyForgeryRC(t *testing.T) {
	mda, mdb := openLoopMD(t), openLoopMD(t)
	// The refused puts fail the initiator's endpoints: keep the default
	// handler from logging each.
	ai, err := mda.OpenIface(uct.IfaceParams{ErrorHandler: func(any, uct.Endpoint, error) {}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := ai.(*Iface), openLoopIface(t, mdb)
	t.Cleanup(func() { a.Close(); b.Close(); mda.Close(); mdb.Close() })
	const guard, n = 64, 4096
	arena := make([]byte, 3*guard+2*n)
	for i := range arena {
		arena[i] = byte(i*13 + 1)
	}
	rw, err := mdb.Register(arena[guard:guard+n], uct.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	ro, err := mdb.Register(arena[2*guard+n:2*guard+2*n], uct.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	protected := func() []byte {
		p := append([]byte(nil), arena...)
		clear(p[guard : guard+n])
		return p
	}
	want := protected()
	var ep uct.Endpoint
	connect := func() {
		if ep != nil {
			ep.Close()
		}
		if ep, err = a.Connect(b.Address(), uct.EPParams{}); err != nil {
			t.Fatal(err)
		}
	}
	connect()
	defer func() { ep.Close() }()
	src := bytes.Repeat([]byte{0xee}, 32)
	tried := 0
	for _, m := range []struct {
		name string
		mem  uct.Mem
		ro   bool
	}{{"rw", rw, false}, {"ro", ro, true}} {
		key := m.mem.PackRKey()
		base := m.mem.Address()
		attempts := []uint64{base - 16, base + n}
		if m.ro {
			attempts = append(attempts, base)
		}
		for i := range key {
			for _, v := range []byte{key[i] ^ 0xff, key[i] + 1, key[i] - 1, key[i] ^ 0x80} {
				forged := append([]byte(nil), key...)
				forged[i] = v
				rk, err := mda.UnpackRKey(forged)
				if err != nil {
					continue
				}
				for _, raddr := range attempts {
					tried++
					err := rcPut(t, a, b, ep, src[:16], raddr, rk)
					what := fmt.Sprintf("%s key byte %d %#x->%#x, put at %#x", m.name, i, key[i], v, raddr)
					if err == nil {
						t.Errorf("%s: completed OK", what)
					} else if !errors.Is(err, uct.ErrRemoteProtection) && !errors.Is(err, uct.ErrInvalidParam) {
						t.Errorf("%s: %v, want ErrRemoteProtection", what, err)
					}
					if !bytes.Equal(protected(), want) {
						t.Fatalf("%s: bytes outside the writable registration changed", what)
					}
					if ep.(*Endpoint).err != nil {
						connect() // a remote access error ends the connection
					}
				}
				rk.Close()
			}
		}
	}
	t.Logf("%d forged puts refused", tried)
	rk, err := mda.UnpackRKey(rw.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	defer rk.Close()
	if err := rcPut(t, a, b, ep, src, rw.Address()+8, rk); err != nil {
		t.Fatalf("put with the genuine key: %v", err)
	}
	if !bytes.Equal(arena[guard+8:guard+8+len(src)], src) {
		t.Fatal("put with the genuine key did not land")
	}
	// A deregistered key is refused the same way.
	rw.Close()
	if err := rcPut(t, a, b, ep, src, rw.Address()+8, rk); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("put after deregistration: %v, want ErrRemoteProtection", err)
	}
}

// Registered memory stays alive while registered, whoever else drops it,
// and becomes collectable when the Mem is closed (as in shm).
func TestRegisteredMemoryKeptAliveRC(t *testing.T) {
	md := openLoopMD(t)
	defer md.Close()
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
	reg() // only the MD holds it
	for range 5 {
		runtime.GC()
		select {
		case <-collected:
			t.Fatal("registered buffer collected before deregistration")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := reg().Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-deadline:
			t.Fatal("deregistered buffer never collected")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
