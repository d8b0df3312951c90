package verbs

import (
	"errors"
	"fmt"
	"math/bits"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// fullAttr has a valid value for every attribute.
func fullAttr(peer *end) QPAttr {
	return QPAttr{PKeyIndex: 0, PortNum: 1, AccessFlags: accessAll, PathMTU: MTU1024, DestQPN: peer.qp.QPNum(),
		RQPSN: 1, SQPSN: 1, MaxDestRdAtomic: 4, MinRNRTimer: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 4,
		AH: AHAttr{DGID: peer.d.GID(), DPort: peer.d.LocalAddr().Port()}}
}

// Legal RC transitions and their required attributes (IBA 1.x table 91,
// as Linux's ib_modify_qp_is_ok encodes it). Any state may go to RESET
// and ERR with no attributes.
var legalTransitions = map[[2]QPState]QPAttrMask{
	{QPSReset, QPSInit}: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags,
	{QPSInit, QPSInit}:  0,
	{QPSInit, QPSRTR}:   QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer,
	{QPSRTR, QPSRTS}:    QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic,
	{QPSRTS, QPSRTS}:    0,
	{QPSRTS, QPSSQD}:    0,
	{QPSSQD, QPSRTS}:    0,
	{QPSSQD, QPSSQD}:    0,
}

func TestQPStateMachine(t *testing.T) {
	a, b := pair(t, rigOpts{})
	path := map[QPState][]QPState{
		QPSReset: nil,
		QPSInit:  {QPSInit},
		QPSRTR:   {QPSInit, QPSRTR},
		QPSRTS:   {QPSInit, QPSRTR, QPSRTS},
		QPSSQD:   {QPSInit, QPSRTR, QPSRTS, QPSSQD},
		QPSErr:   {QPSErr},
	}
	full := fullAttr(b)
	reach := func(t *testing.T, qp *QP, s QPState) {
		t.Helper()
		if err := qp.Modify(&QPAttr{State: QPSReset}, QPAttrState); err != nil {
			t.Fatal(err)
		}
		cur := QPSReset
		for _, n := range path[s] {
			a := full
			a.State = n
			if err := qp.Modify(&a, QPAttrState|required(cur, n)); err != nil {
				t.Fatalf("to %v: %v", n, err)
			}
			cur = n
		}
	}
	qp := a.qp
	for cur := range path {
		for next := QPSReset; next <= QPSErr; next++ {
			t.Run(fmt.Sprintf("%v-%v", cur, next), func(t *testing.T) {
				req, legal := legalTransitions[[2]QPState{cur, next}]
				if next == QPSReset || next == QPSErr {
					legal = true
				}
				reach(t, qp, cur)
				attr := full
				attr.State = next
				if !legal {
					err := qp.Modify(&attr, QPAttrState|req)
					if !errors.Is(err, uct.ErrInvalidParam) {
						t.Fatalf("illegal %v -> %v: err %v", cur, next, err)
					}
					if s := qp.State(); s != cur {
						t.Fatalf("state %v after refused modify, want %v", s, cur)
					}
					return
				}
				// Each missing required attribute is refused.
				for m := req; m != 0; m &= m - 1 {
					bit := QPAttrMask(1) << bits.TrailingZeros32(uint32(m))
					if err := qp.Modify(&attr, QPAttrState|req&^bit); !errors.Is(err, uct.ErrInvalidParam) {
						t.Fatalf("%v -> %v without attribute %#x: err %v", cur, next, bit, err)
					}
				}
				// An attribute the transition does not take is refused.
				if next != QPSSQD || cur != QPSSQD {
					if err := qp.Modify(&attr, QPAttrState|req|QPAttrDestQPN|QPAttrSQPSN); err == nil && req&(QPAttrDestQPN|QPAttrSQPSN) != QPAttrDestQPN|QPAttrSQPSN {
						t.Fatalf("%v -> %v took extra attributes", cur, next)
					}
					reach(t, qp, cur)
				}
				if err := qp.Modify(&attr, QPAttrState|req); err != nil {
					t.Fatalf("legal %v -> %v: %v", cur, next, err)
				}
				if s := qp.Query().State; s != next {
					t.Fatalf("state %v, want %v", s, next)
				}
			})
		}
	}
}

func required(cur, next QPState) QPAttrMask { return legalTransitions[[2]QPState{cur, next}] }

func TestQPAttrValues(t *testing.T) {
	a, b := pair(t, rigOpts{})
	qp := a.qp
	if err := qp.Modify(&QPAttr{State: QPSReset}, QPAttrState); err != nil {
		t.Fatal(err)
	}
	init := QPAttr{State: QPSInit, PortNum: 1, AccessFlags: AccessRemoteWrite}
	m := QPAttrState | QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags
	if err := qp.Modify(&QPAttr{State: QPSInit, PortNum: 2}, m); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("port 2: %v", err)
	}
	if err := qp.Modify(&init, m); err != nil {
		t.Fatal(err)
	}
	rtrMask := QPAttrState | required(QPSInit, QPSRTR)
	for name, mod := range map[string]func(*QPAttr){
		"mtu 8192":         func(a *QPAttr) { a.PathMTU = 6 },
		"dest qpn 2^24":    func(a *QPAttr) { a.DestQPN = 1 << 24 },
		"rq psn 2^24":      func(a *QPAttr) { a.RQPSN = 1 << 24 },
		"min rnr timer 32": func(a *QPAttr) { a.MinRNRTimer = 32 },
		"ipv6 gid":         func(a *QPAttr) { a.AH.DGID = netipMustV6() },
	} {
		attr := fullAttr(b)
		attr.State = QPSRTR
		mod(&attr)
		if err := qp.Modify(&attr, rtrMask); !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	attr := fullAttr(b)
	attr.State = QPSRTR
	if err := qp.Modify(&attr, rtrMask); err != nil {
		t.Fatal(err)
	}
	rtsMask := QPAttrState | required(QPSRTR, QPSRTS)
	for name, mod := range map[string]func(*QPAttr){
		"retry 8":     func(a *QPAttr) { a.RetryCnt = 8 },
		"rnr retry 8": func(a *QPAttr) { a.RNRRetry = 8 },
		"timeout 32":  func(a *QPAttr) { a.Timeout = 32 },
	} {
		attr := fullAttr(b)
		attr.State = QPSRTS
		mod(&attr)
		if err := qp.Modify(&attr, rtsMask); !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	// Wrong current state given.
	attr = fullAttr(b)
	attr.State, attr.CurState = QPSRTS, QPSRTS
	if err := qp.Modify(&attr, rtsMask|QPAttrCurState); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("cur state RTS while in RTR: %v", err)
	}
	attr.CurState = QPSRTR
	if err := qp.Modify(&attr, rtsMask|QPAttrCurState); err != nil {
		t.Fatal(err)
	}
	q := qp.Query()
	if q.State != QPSRTS || q.SQPSN != 1 || q.RetryCnt != 7 || q.PathMTU != MTU1024 || q.DestQPN != b.qp.QPNum() || q.AccessFlags != AccessRemoteWrite {
		t.Fatalf("query %+v", q)
	}
}
