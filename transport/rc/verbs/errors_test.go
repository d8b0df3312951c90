package verbs

import (
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
