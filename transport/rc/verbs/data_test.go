package verbs

import (
	"encoding/binary"
	"testing"
	"time"
)

// sizes are the message sizes every operation is checked with.
func sizes(mtu int) []int {
	return []int{0, 1, mtu - 1, mtu, mtu + 1, 64 << 10, 4 << 20}
}

func TestLoopbackOps(t *testing.T) {
	// Only the test drives the engines: the race detector cannot see the
	// UDP socket order a retransmitted WRITE executed by a background pass
	// after the test started reading its target.
	o := rigOpts{bufSize: 8 << 20, noWatchdog: true}
	a, b := pair(t, o)
	mtu := MTU1024.Bytes()
	var id uint64
	for _, op := range []WROpcode{WRSend, WRSendWithImm, WRRDMAWrite, WRRDMAWriteWithImm, WRRDMARead} {
		for _, n := range sizes(mtu) {
			id++
			t.Run(label(op, n), func(t *testing.T) {
				src, dst := a.buf[:n], b.buf[4<<20:4<<20+n]
				if op == WRRDMARead {
					src, dst = b.buf[:n], a.buf[4<<20:4<<20+n]
				}
				fill(src, id)
				clear(dst)
				imm := uint32(id) * 0x01010101
				recv := op == WRSend || op == WRSendWithImm || op == WRRDMAWriteWithImm
				if recv {
					if _, err := b.qp.PostRecv(RecvWR{ID: 1000 + id, SG: []SGE{b.mr.SGE(4<<20, n)}}); err != nil {
						t.Fatal(err)
					}
				}
				wr := SendWR{ID: id, Opcode: op, Flags: SendSignaled, Imm: imm, SG: []SGE{a.mr.SGE(0, n)}}
				switch op {
				case WRRDMAWrite, WRRDMAWriteWithImm:
					wr.RemoteAddr, wr.RKey = b.mr.Addr()+4<<20, b.mr.RKey()
				case WRRDMARead:
					wr.SG = []SGE{a.mr.SGE(4<<20, n)}
					wr.RemoteAddr, wr.RKey = b.mr.Addr(), b.mr.RKey()
				}
				if _, err := a.qp.PostSend(wr); err != nil {
					t.Fatal(err)
				}
				wc := poll(t, a.cq, 1, a.d, b.d)[0]
				checkWC(t, wc, id, WCSuccess, wcOpcodeOf(op))
				if op == WRRDMARead && wc.ByteLen != uint32(n) {
					t.Fatalf("READ byte_len %d, want %d", wc.ByteLen, n)
				}
				if recv {
					rwc := poll(t, b.cq, 1, a.d, b.d)[0]
					want := WCRecv
					if op == WRRDMAWriteWithImm {
						want = WCRecvRDMAWithImm
					}
					checkWC(t, rwc, 1000+id, WCSuccess, want)
					if rwc.ByteLen != uint32(n) || rwc.QPNum != b.qp.QPNum() || rwc.SrcQP != a.qp.QPNum() {
						t.Fatalf("receive completion %+v, want %d bytes qp %#x from %#x", rwc, n, b.qp.QPNum(), a.qp.QPNum())
					}
					hasImm := op == WRSendWithImm || op == WRRDMAWriteWithImm
					if hasImm != (rwc.Flags&WCWithImm != 0) || hasImm && rwc.Imm != imm {
						t.Fatalf("receive completion %+v: imm flag/value wrong (want imm %v %#x)", rwc, hasImm, imm)
					}
				}
				sameBytes(t, "data", dst, src)
			})
		}
	}
	if c := a.d.Counters(); c.RxICRCErrors != 0 || c.Retransmits != 0 {
		t.Logf("counters a: %+v", c)
	}
}

func TestLoopbackSGEAndInline(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true})
	fill(a.buf[:4096], 7)
	// Gather three pieces into one SEND, scatter into two.
	if _, err := b.qp.PostRecv(RecvWR{ID: 1, SG: []SGE{b.mr.SGE(0, 1000), b.mr.SGE(5000, 2000)}}); err != nil {
		t.Fatal(err)
	}
	wr := SendWR{ID: 2, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 700), a.mr.SGE(1000, 1200), a.mr.SGE(3000, 100)}}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 2, WCSuccess, WCSend)
	rwc := poll(t, b.cq, 1, a.d, b.d)[0]
	checkWC(t, rwc, 1, WCSuccess, WCRecv)
	want := append(append(append([]byte{}, a.buf[:700]...), a.buf[1000:2200]...), a.buf[3000:3100]...)
	got := append(append([]byte{}, b.buf[:1000]...), b.buf[5000:5000+len(want)-1000]...)
	if rwc.ByteLen != uint32(len(want)) {
		t.Fatalf("byte_len %d, want %d", rwc.ByteLen, len(want))
	}
	sameBytes(t, "gathered/scattered", got, want)

	// Inline: the source may change right after PostSend.
	fill(a.buf[:200], 8)
	want = append([]byte{}, a.buf[:200]...)
	wr = SendWR{ID: 3, Opcode: WRRDMAWrite, Flags: SendInline, SG: []SGE{a.mr.SGE(0, 200)}, RemoteAddr: b.mr.Addr() + 10000, RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	clear(a.buf[:200])
	// Unsignaled: a signaled SEND after it completes, in order.
	if _, err := b.qp.PostRecv(RecvWR{ID: 4, SG: []SGE{b.mr.SGE(20000, 8)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 5, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 8)}}); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 5, WCSuccess, WCSend)
	poll(t, b.cq, 1, a.d, b.d)
	sameBytes(t, "inline write", b.buf[10000:10200], want)
}

func TestLoopbackAtomics(t *testing.T) {
	a, b := pair(t, rigOpts{noWatchdog: true})
	binary.NativeEndian.PutUint64(b.buf[64:], 100)
	post := func(wr SendWR) WC {
		t.Helper()
		if _, err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		return poll(t, a.cq, 1, a.d, b.d)[0]
	}
	res := func() uint64 { return binary.NativeEndian.Uint64(a.buf[8:]) }
	wc := post(SendWR{ID: 1, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SG: []SGE{a.mr.SGE(8, 8)}, RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 5})
	checkWC(t, wc, 1, WCSuccess, WCFetchAdd)
	if res() != 100 || binary.NativeEndian.Uint64(b.buf[64:]) != 105 {
		t.Fatalf("fetch-add: got orig %d, remote %d; want 100, 105", res(), binary.NativeEndian.Uint64(b.buf[64:]))
	}
	wc = post(SendWR{ID: 2, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SG: []SGE{a.mr.SGE(8, 8)}, RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 7, Swap: 1})
	checkWC(t, wc, 2, WCSuccess, WCCompSwap)
	if res() != 105 || binary.NativeEndian.Uint64(b.buf[64:]) != 105 {
		t.Fatalf("failed cmp-swap: orig %d remote %d; want 105, 105", res(), binary.NativeEndian.Uint64(b.buf[64:]))
	}
	wc = post(SendWR{ID: 3, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SG: []SGE{a.mr.SGE(8, 8)}, RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 105, Swap: 1 << 40})
	checkWC(t, wc, 3, WCSuccess, WCCompSwap)
	if res() != 105 || binary.NativeEndian.Uint64(b.buf[64:]) != 1<<40 {
		t.Fatalf("cmp-swap: orig %d remote %d; want 105, 2^40", res(), binary.NativeEndian.Uint64(b.buf[64:]))
	}
	// Many in flight at once, with max_rd_atomic 16.
	binary.NativeEndian.PutUint64(b.buf[128:], 0)
	const n = 100
	for i := 0; i < n; i++ {
		if _, err := a.qp.PostSend(SendWR{ID: uint64(10 + i), Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SG: []SGE{a.mr.SGE(1024+8*i, 8)}, RemoteAddr: b.mr.Addr() + 128, RKey: b.mr.RKey(), CompareAdd: 1}); err != nil {
			t.Fatal(err)
		}
	}
	wcs := poll(t, a.cq, n, a.d, b.d)
	for i, wc := range wcs {
		checkWC(t, wc, uint64(10+i), WCSuccess, WCFetchAdd)
		if v := binary.NativeEndian.Uint64(a.buf[1024+8*i:]); v != uint64(i) {
			t.Fatalf("fetch-add %d returned %d", i, v)
		}
	}
	if v := binary.NativeEndian.Uint64(b.buf[128:]); v != n {
		t.Fatalf("counter %d, want %d", v, n)
	}
}

// TestDeferredAckBeforeErr: the ACK of a SEND whose receive completed is
// held back for the receiver's answer; moving the receiving QP to ERR
// before the next engine pass still sends it, so the sender's SEND
// completes successfully instead of running out of retries.
func TestDeferredAckBeforeErr(t *testing.T) {
	o := rigOpts{retry: 2, noWatchdog: true}
	a, b := pair(t, o)
	b.d.Progress() // whatever the move to RTS left to send
	if _, err := b.qp.PostRecv(RecvWR{ID: 7, SG: []SGE{b.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 8)}}); err != nil {
		t.Fatal(err)
	}
	a.d.Progress() // the SEND leaves with the sender's next engine pass
	var wc [1]WC
	deadline := time.Now().Add(testTimeout)
	for b.cq.PollNoProgress(wc[:]) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no receive completion")
		}
		b.d.Progress()
	}
	checkWC(t, wc[0], 7, WCSuccess, WCRecv)
	if err := b.qp.Modify(&QPAttr{State: QPSErr}, QPAttrState); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCSend)
}
