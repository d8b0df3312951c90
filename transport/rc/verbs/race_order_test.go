package verbs

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// TestTwoDevicesOrderedByPeer: memory registered on two devices of one
// process is written through the first (an RDMA WRITE) and, once the
// peer has seen the write complete, read through the second (an RDMA
// READ). The peer's request on the second device is caused by the first
// device's acknowledgement, so the read is ordered after the write,
// though the two devices run in different goroutines and the
// acknowledgement travels outside the process. Under -race the detector
// must see that order (wireSync, race_unsafe.go), and the value read is
// always the one written.
func TestTwoDevicesOrderedByPeer(t *testing.T) {
	o := rigOpts{bufSize: 4096}
	o.defaults()
	open := func(addr string) *Device {
		return openDevCfg(t, Config{Addr: netip.MustParseAddr(addr), Port: -1})
	}
	// The target's two devices are driven only by their own goroutines.
	t1, t2 := newEnd(t, open("127.0.0.2"), o), newEnd(t, open("127.0.0.4"), o)
	i1, i2 := newEnd(t, open("127.0.0.1"), o), newEnd(t, open("127.0.0.3"), o)
	shared, err := t2.pd.RegMR(t1.buf, accessAll)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Dereg() })
	toRTS(t, i1, t1, o, 1, 1)
	toRTS(t, t1, i1, o, 1, 1)
	toRTS(t, i2, t2, o, 1, 1)
	toRTS(t, t2, i2, o, 1, 1)
	const n = 50
	for k := uint64(1); k <= n; k++ {
		off := (k % 8) * 64
		binary.LittleEndian.PutUint64(i1.buf[off:], k)
		if _, err := i1.qp.PostSend(SendWR{ID: k, Opcode: WRRDMAWrite, Flags: SendSignaled,
			SG: []SGE{i1.mr.SGE(int(off), 64)}, RemoteAddr: t1.mr.Addr() + off, RKey: t1.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		checkWC(t, poll(t, i1.cq, 1, i1.d)[0], k, WCSuccess, WCRDMAWrite)
		if _, err := i2.qp.PostSend(SendWR{ID: k, Opcode: WRRDMARead, Flags: SendSignaled,
			SG: []SGE{i2.mr.SGE(int(off), 64)}, RemoteAddr: shared.Addr() + off, RKey: shared.RKey()}); err != nil {
			t.Fatal(err)
		}
		checkWC(t, poll(t, i2.cq, 1, i2.d)[0], k, WCSuccess, WCRDMARead)
		if got := binary.LittleEndian.Uint64(i2.buf[off:]); got != k {
			t.Fatalf("read %d through the second device after writing %d through the first", got, k)
		}
	}
}
