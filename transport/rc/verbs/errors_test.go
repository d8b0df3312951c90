package verbs

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// A WRITE with a bad rkey: the requester's WR completes with
// RemAccessErr, the WRs behind it are flushed, both QPs end in ERR, the
// responder reports a QP access error, and later posts complete flushed.
func TestBadRKey(t *testing.T) {
	a, b := pair(t, rigOpts{})
	wrs := []SendWR{
		{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 100)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
		{ID: 2, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 100)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey() ^ 0x55},
		{ID: 3, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 100)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
		{ID: 4, Opcode: WRSend, SG: []SGE{a.mr.SGE(0, 10)}},
	}
	if _, err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	wcs := poll(t, a.cq, 4, a.d, b.d)
	checkWC(t, wcs[0], 1, WCSuccess, WCRDMAWrite)
	checkWC(t, wcs[1], 2, WCRemAccessErr, WCRDMAWrite)
	checkWC(t, wcs[2], 3, WCWRFlushErr, WCRDMAWrite)
	checkWC(t, wcs[3], 4, WCWRFlushErr, WCSend)
	if s := a.qp.State(); s != QPSErr {
		t.Fatalf("requester QP in %v", s)
	}
	ev := nextEvent(t, b.d, uct.EventQPAccessError, a.d, b.d)
	if ev.Owner != b.qp || !errors.Is(ev.Err, uct.ErrRemoteOperation) {
		t.Fatalf("event %v owner %v", ev, ev.Owner)
	}
	if s := b.qp.State(); s != QPSErr {
		t.Fatalf("responder QP in %v", s)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 5, Opcode: WRSend, Flags: SendSignaled}); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 5, WCWRFlushErr, WCSend)
	noMore(t, a.cq, a.d, b.d)
}

// Out-of-range and rights: READ beyond the region, WRITE to a read-only
// region.
func TestRemoteAccessChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		wr   func(a, b *end, ro *MR) SendWR
	}{
		{"read past end", func(a, b *end, ro *MR) SendWR {
			return SendWR{ID: 1, Opcode: WRRDMARead, SG: []SGE{a.mr.SGE(0, 64)}, RemoteAddr: b.mr.Addr() + uint64(b.mr.Len()) - 32, RKey: b.mr.RKey()}
		}},
		{"write read-only", func(a, b *end, ro *MR) SendWR {
			return SendWR{ID: 1, Opcode: WRRDMAWrite, SG: []SGE{a.mr.SGE(0, 64)}, RemoteAddr: ro.Addr(), RKey: ro.RKey()}
		}},
		{"atomic read-only", func(a, b *end, ro *MR) SendWR {
			return SendWR{ID: 1, Opcode: WRAtomicFetchAndAdd, SG: []SGE{a.mr.SGE(0, 8)}, RemoteAddr: ro.Addr(), RKey: ro.RKey()}
		}},
		{"deregistered", func(a, b *end, ro *MR) SendWR {
			if err := ro.Dereg(); err != nil {
				panic(err)
			}
			return SendWR{ID: 1, Opcode: WRRDMARead, SG: []SGE{a.mr.SGE(0, 64)}, RemoteAddr: ro.Addr(), RKey: ro.RKey()}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pair(t, rigOpts{})
			ro, err := b.pd.RegMR(make([]byte, 4096), AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			wr := tc.wr(a, b, ro)
			wr.Flags = SendSignaled
			if _, err := a.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCRemAccessErr, wcOpcodeOf(wr.Opcode))
			nextEvent(t, b.d, uct.EventQPAccessError, a.d, b.d)
		})
	}
}

// A SEND that finds no receive is RNR NAKed and retried until a receive
// is posted; then it completes, content intact.
func TestRNRThenSuccess(t *testing.T) {
	a, b := pair(t, rigOpts{rnrRetry: 7, rnrTimer: 1}) // infinite, 10 µs
	fill(a.buf[:3000], 3)
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 3000)}}); err != nil {
		t.Fatal(err)
	}
	// Let it be refused a few times.
	for b.d.Counters().RNRNAKsSent < 3 {
		a.d.Progress()
		b.d.Progress()
	}
	var wc [1]WC
	if n := a.cq.Poll(wc[:]); n != 0 {
		t.Fatalf("completed before a receive was posted: %+v", wc[0])
	}
	if _, err := b.qp.PostRecv(RecvWR{ID: 2, SG: []SGE{b.mr.SGE(0, 4096)}}); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCSend)
	rwc := poll(t, b.cq, 1, a.d, b.d)[0]
	checkWC(t, rwc, 2, WCSuccess, WCRecv)
	if rwc.ByteLen != 3000 {
		t.Fatalf("byte_len %d", rwc.ByteLen)
	}
	sameBytes(t, "after RNR", b.buf[:3000], a.buf[:3000])
	if c := a.d.Counters(); c.RNRNAKsRcvd < 3 {
		t.Fatalf("counters %+v: fewer RNR NAKs than sent", c)
	}
}

// With a finite rnr_retry, the SEND fails with RNRRetryExcErr after
// rnr_retry retries, the rest is flushed and the QP is in ERR.
func TestRNRRetryExceeded(t *testing.T) {
	a, b := pair(t, rigOpts{rnrRetry: 3, rnrTimer: 1})
	if _, err := a.qp.PostSend(
		SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 10)}},
		SendWR{ID: 2, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 10)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
	); err != nil {
		t.Fatal(err)
	}
	wcs := poll(t, a.cq, 2, a.d, b.d)
	checkWC(t, wcs[0], 1, WCRNRRetryExcErr, WCSend)
	checkWC(t, wcs[1], 2, WCWRFlushErr, WCRDMAWrite)
	if s := a.qp.State(); s != QPSErr {
		t.Fatalf("QP in %v", s)
	}
	if n := b.d.Counters().RNRNAKsSent; n != 4 {
		t.Fatalf("%d RNR NAKs sent, want 1 + 3 retries", n)
	}
}

// The peer goes away (its device is closed: nothing answers): the first
// outstanding WR fails with RetryExcErr after retry_cnt timeouts, the
// rest is flushed.
func TestRetryExceeded(t *testing.T) {
	a, b := pair(t, rigOpts{timeout: 8, retry: 2}) // ~1 ms
	if err := b.d.Close(); err != nil {
		t.Fatal(err)
	}
	var wrs []SendWR
	for i := 1; i <= 5; i++ {
		wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 5000)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()})
	}
	if _, err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	wcs := poll(t, a.cq, 5, a.d)
	checkWC(t, wcs[0], 1, WCRetryExcErr, WCRDMAWrite)
	for i, wc := range wcs[1:] {
		checkWC(t, wc, uint64(i+2), WCWRFlushErr, WCRDMAWrite)
	}
	if c := a.d.Counters(); c.Timeouts != 3 {
		t.Fatalf("counters %+v: want 3 timeouts (1 + retry_cnt 2)", c)
	}
}

// PSNs wrap at 2^24: start just below it and move enough packets across.
//
// Only the test drives the engines: a READ the requester timed out on is
// answered twice, and with the background progress goroutine the second
// answer was still reading its source when the next round refilled it
// (a data race under -race, once under load).
func TestPSNWrap(t *testing.T) {
	a, b := pair(t, rigOpts{sqPSN: 0xffffff - 20, rqPSN: 0xfffff0, bufSize: 1 << 20, noWatchdog: true})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("counters a: %+v", a.d.Counters())
			t.Logf("counters b: %+v", b.d.Counters())
		}
	})
	for i := 0; i < 4; i++ {
		fill(a.buf[:100<<10], uint64(i))
		if _, err := a.qp.PostSend(SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 100<<10)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], uint64(i), WCSuccess, WCRDMAWrite)
		sameBytes(t, "write across the wrap", b.buf[:100<<10], a.buf[:100<<10])
		// And READs the other way, their responses crossing it too.
		fill(b.buf[200<<10:300<<10], uint64(i+10))
		fill(a.buf[400<<10:500<<10], uint64(i+20))
		if _, err := b.qp.PostSend(SendWR{ID: uint64(i), Opcode: WRRDMARead, Flags: SendSignaled, SG: []SGE{b.mr.SGE(200<<10, 100<<10)}, RemoteAddr: a.mr.Addr() + 400<<10, RKey: a.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
		checkWC(t, poll(t, b.cq, 1, a.d, b.d)[0], uint64(i), WCSuccess, WCRDMARead)
		sameBytes(t, "read across the wrap", b.buf[200<<10:300<<10], a.buf[400<<10:500<<10])
	}
	if q := a.qp.Query(); q.State != QPSRTS {
		t.Fatalf("state %v", q.State)
	}
	if psn := a.qp.req.psn; psn > 0x100000 {
		t.Fatalf("send PSN %#x did not wrap", psn)
	}
}

// SRQ: two QPs share it; the limit event fires once when the count drops
// below the limit, and re-arming works.
func TestSRQLimit(t *testing.T) {
	srq := SRQAttr{MaxWR: 64, MaxSGE: 1, Limit: 0}
	a, b := pair(t, rigOpts{srq: &srq})
	s := b.qp.srq
	var recvs []RecvWR
	for i := 0; i < 10; i++ {
		recvs = append(recvs, RecvWR{ID: uint64(100 + i), SG: []SGE{b.mr.SGE(i*100, 100)}})
	}
	if _, err := s.PostRecv(recvs...); err != nil {
		t.Fatal(err)
	}
	if err := s.Modify(SRQAttr{Limit: 8}, SRQAttrLimit); err != nil {
		t.Fatal(err)
	}
	send := func(id uint64) {
		t.Helper()
		if _, err := a.qp.PostSend(SendWR{ID: id, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 50)}}); err != nil {
			t.Fatal(err)
		}
		checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], id, WCSuccess, WCSend)
		checkWC(t, poll(t, b.cq, 1, a.d, b.d)[0], 100+id, WCSuccess, WCRecv)
	}
	send(0)
	send(1) // 8 left: not below the limit
	if n := b.d.Events().Len(); n != 0 {
		t.Fatalf("%d events before the limit was crossed", n)
	}
	send(2) // 7 left
	ev := nextEvent(t, b.d, uct.EventSRQLimitReached)
	if ev.Owner != s {
		t.Fatalf("event owner %v", ev.Owner)
	}
	if q := s.Query(); q.Limit != 0 {
		t.Fatalf("limit %d after the event, want disarmed", q.Limit)
	}
	send(3)
	if n := b.d.Events().Len(); n != 0 {
		t.Fatalf("%d events with the limit disarmed", n)
	}
	if err := s.Modify(SRQAttr{Limit: 6}, SRQAttrLimit); err != nil {
		t.Fatal(err)
	}
	send(4) // 5 left
	nextEvent(t, b.d, uct.EventSRQLimitReached)
	if err := s.Modify(SRQAttr{MaxWR: 100}, SRQAttrMaxWR); !errors.Is(err, uct.ErrUnsupported) {
		t.Fatalf("resize: %v", err)
	}
	if err := s.Close(); !errors.Is(err, uct.ErrBusy) {
		t.Fatalf("close SRQ in use: %v", err)
	}
}

// A CQ that overflows reports a CQ error and takes its QPs to ERR.
func TestCQOverrun(t *testing.T) {
	a, b := pair(t, rigOpts{cqe: 4})
	var wrs []SendWR
	for i := 0; i < 6; i++ {
		wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 8)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()})
	}
	if _, err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, a.d, uct.EventCQError, a.d, b.d)
	if ev.Owner != a.cq || !errors.Is(ev.Err, uct.ErrOverrun) || !errors.Is(a.cq.Err(), uct.ErrOverrun) {
		t.Fatalf("event %v, cq err %v", ev, a.cq.Err())
	}
	nextEvent(t, a.d, uct.EventQPFatal, a.d, b.d)
	if s := a.qp.State(); s != QPSErr {
		t.Fatalf("QP in %v", s)
	}
	wcs := poll(t, a.cq, 4)
	for i, wc := range wcs {
		checkWC(t, wc, uint64(i), WCSuccess, WCRDMAWrite)
	}
}

// Posting in a state that does not take sends, and to a bad local key.
func TestPostErrors(t *testing.T) {
	a, b := pair(t, rigOpts{sendWR: 2})
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRSend, SG: make([]SGE, 5)}); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("5 SGEs: %v", err)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRAtomicFetchAndAdd, SG: []SGE{a.mr.SGE(0, 4)}}); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("4-byte atomic: %v", err)
	}
	// A bad lkey: local protection error, QP to ERR.
	if _, err := a.qp.PostSend(SendWR{ID: 2, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{{Addr: a.mr.Addr(), Length: 10, LKey: a.mr.LKey() + 1}}}); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 2, WCLocProtErr, WCSend)
	if s := a.qp.State(); s != QPSErr {
		t.Fatalf("QP in %v", s)
	}
	if err := a.qp.Modify(&QPAttr{State: QPSReset}, QPAttrState); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 3, Opcode: WRSend}); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("post in RESET: %v", err)
	}
	// A full send queue.
	c, d := pair(t, rigOpts{sendWR: 2})
	_ = d
	if err := d.d.Close(); err != nil {
		t.Fatal(err)
	}
	wr := SendWR{Opcode: WRRDMAWrite, SG: []SGE{c.mr.SGE(0, 8)}, RemoteAddr: 1, RKey: 1}
	if n, err := c.qp.PostSend(wr, wr, wr); n != 2 || !errors.Is(err, uct.ErrNoResource) {
		t.Fatalf("3 WRs into 2 slots: %d, %v", n, err)
	}
}

// READs whose responses fill the responder's transmit budget exactly
// (txBudget packets each) all go out without waiting for a retry: the
// responder's output left after a full budget is sent on the next pass.
func TestReadBudgetBoundary(t *testing.T) {
	const n = txBudget * 1024
	a, b := pair(t, rigOpts{mtu: MTU1024, bufSize: 4 * n, timeout: 16, noWatchdog: true}) // ~270 ms
	fill(b.buf[:3*n], 9)
	var wrs []SendWR
	for i := 0; i < 3; i++ {
		wrs = append(wrs, SendWR{ID: uint64(i), Opcode: WRRDMARead, Flags: SendSignaled, SG: []SGE{a.mr.SGE(i*n, n)},
			RemoteAddr: b.mr.Addr() + uint64(i*n), RKey: b.mr.RKey()})
	}
	if _, err := a.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	for i, wc := range poll(t, a.cq, 3, a.d, b.d) {
		checkWC(t, wc, uint64(i), WCSuccess, WCRDMARead)
	}
	if !bytes.Equal(a.buf[:3*n], b.buf[:3*n]) {
		t.Fatal("read data differs")
	}
	if c := a.d.Counters(); c.Timeouts != 0 || c.Retransmits != 0 {
		t.Fatalf("counters %+v: want no timeout, no retransmission", c)
	}
}
