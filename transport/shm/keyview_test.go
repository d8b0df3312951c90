package shm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// A key whose view (the cached result of its last full check) lets puts
// and gets into allocated memory skip the key table still refuses what
// the full check refuses: other bounds, missing rights, a closed
// endpoint, a disabled target, freed memory; and it works on a second
// endpoint to the same peer.
func TestKeyViewRechecks(t *testing.T) {
	_, a := openIface(t)
	mdB, b := openIface(t)
	connect := func() uct.Endpoint {
		ep, err := a.Connect(b.Address(), uct.EPParams{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ep.Close() })
		return ep
	}
	ep1, ep2 := connect(), connect()
	rw, rwk := allocKey(t, mdB, uct.AccessAll)
	ro, rok := allocKey(t, mdB, uct.AccessRemoteRead)
	base := rw.Address()
	mem := rw.Bytes()
	protect := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, uct.ErrRemoteProtection) {
			t.Fatalf("%s: %v, want ErrRemoteProtection", what, err)
		}
	}

	for i := 0; i < 3; i++ { // the first put checks fully, the others use the view
		if err := ep1.PutShort([]byte{1, 2, 3, 4}, base+8, rwk); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if !bytes.Equal(mem[8:12], []byte{1, 2, 3, 4}) {
		t.Fatalf("memory holds %v after the puts", mem[8:12])
	}
	protect(ep1.PutShort([]byte{9, 9}, base+4095, rwk), "put across the end")
	protect(ep1.PutShort([]byte{9}, base-1, rwk), "put before the start")
	_, err := ep1.PutBcopy(make([]byte, 4097), base, rwk)
	protect(err, "put longer than the memory")
	dst := make([]byte, 4)
	if err := ep1.GetBcopy(dst, base+8, rwk, nil); err != nil || !bytes.Equal(dst, []byte{1, 2, 3, 4}) {
		t.Fatalf("get through the view: %v %v", err, dst)
	}

	// Read-only memory: a get makes a view, a put through it is refused.
	if err := ep1.GetZcopy([][]byte{dst}, ro.Address(), rok, nil); err != nil {
		t.Fatalf("get from read-only memory: %v", err)
	}
	protect(ep1.PutShort([]byte{7}, ro.Address(), rok), "put to read-only memory")

	// Another endpoint to the same peer, then the first again.
	if err := ep2.PutZcopy([][]byte{{5}}, base, rwk, nil); err != nil || mem[0] != 5 {
		t.Fatalf("put on the second endpoint: %v (byte %d)", err, mem[0])
	}
	if err := ep1.PutShort([]byte{6}, base, rwk); err != nil || mem[0] != 6 {
		t.Fatalf("put on the first endpoint again: %v (byte %d)", err, mem[0])
	}

	// A closed endpoint writes nothing.
	ep1.Close()
	if err := ep1.PutShort([]byte{0xee}, base, rwk); err == nil || mem[0] != 6 {
		t.Fatalf("put on a closed endpoint: %v (byte %d)", err, mem[0])
	}

	// A disabled target refuses until it is up again.
	ib := b.(*Iface)
	if err := ib.SetDeviceStatus(uct.DeviceDown); err != nil {
		t.Fatal(err)
	}
	if err := ep2.PutShort([]byte{0xee}, base, rwk); !errors.Is(err, uct.ErrRemoteNICFailed) || mem[0] != 6 {
		t.Fatalf("put to a disabled target: %v (byte %d), want ErrRemoteNICFailed", err, mem[0])
	}
	if err := ib.SetDeviceStatus(uct.DeviceUp); err != nil {
		t.Fatal(err)
	}

	// Freed memory: the key stops working at once.
	ep3 := connect()
	if err := ep3.PutShort([]byte{3}, base, rwk); err != nil {
		t.Fatalf("put on a third endpoint: %v", err)
	}
	rw.Close()
	protect(ep3.PutShort([]byte{4}, base, rwk), "put after free")
	protect(ep3.GetBcopy(dst, base, rwk, nil), "get after free")
}

// TestKeyViewPutShort8: 8-byte puts, which the view's fast path stores in
// one word, land where they are aimed and get the same checks as any
// other: the end of the memory, read-only memory (also a zero-length put
// through a view that a get made), freed memory.
func TestKeyViewPutShort8(t *testing.T) {
	_, a := openIface(t)
	mdB, b := openIface(t)
	ep, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	rw, rwk := allocKey(t, mdB, uct.AccessAll)
	ro, rok := allocKey(t, mdB, uct.AccessRemoteRead)
	protect := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, uct.ErrRemoteProtection) {
			t.Fatalf("%s: %v, want ErrRemoteProtection", what, err)
		}
	}
	base, mem := rw.Address(), rw.Bytes()
	word := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for i, off := range []uint64{0, 8, 13, 4088} { // the first checks fully, the others use the view
		if err := ep.PutShort(word, base+off, rwk); err != nil {
			t.Fatalf("put %d at +%d: %v", i, off, err)
		}
		if !bytes.Equal(mem[off:off+8], word) {
			t.Fatalf("put %d at +%d: memory holds %v", i, off, mem[off:off+8])
		}
	}
	protect(ep.PutShort(word, base+4089, rwk), "8 bytes across the end")
	protect(ep.PutShort(word, base-8, rwk), "8 bytes before the start")

	dst := make([]byte, 8)
	if err := ep.GetBcopy(dst, ro.Address(), rok, nil); err != nil {
		t.Fatalf("get from read-only memory: %v", err)
	}
	protect(ep.PutShort(word, ro.Address(), rok), "8 bytes to read-only memory")
	protect(ep.PutShort(nil, ro.Address(), rok), "0 bytes to read-only memory")
	if !bytes.Equal(ro.Bytes()[:8], make([]byte, 8)) {
		t.Fatalf("read-only memory holds %v", ro.Bytes()[:8])
	}

	rw.Close()
	protect(ep.PutShort(word, base, rwk), "8 bytes after free")
}

// allocKey allocates 4096 bytes on md with access acc and unpacks their
// key, both released when t ends.
func allocKey(t *testing.T, md uct.MD, acc uct.Access) (uct.Mem, uct.RKey) {
	t.Helper()
	m, err := md.Alloc(4096, acc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	rk, err := md.UnpackRKey(m.PackRKey())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rk.Close() })
	return m, rk
}
