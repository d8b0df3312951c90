package verbs_test

import (
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// side is one device with a PD, CQ, QP and registered buffer.
type side struct {
	dev *verbs.Device
	cq  *verbs.CQ
	qp  *verbs.QP
	mr  *verbs.MR
}

func open(addr string) side {
	dev, err := verbs.Open(verbs.Config{Addr: netip.MustParseAddr(addr), Port: -1})
	if err != nil {
		panic(err)
	}
	pd, _ := dev.AllocPD()
	cq, _ := dev.CreateCQ(16, nil)
	mr, _ := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16}})
	if err != nil {
		panic(err)
	}
	return side{dev, cq, qp, mr}
}

// connect moves s.qp to RTS towards peer (what ibv_rc_pingpong does after
// exchanging QPN, PSN and GID).
func connect(s, peer side) {
	a := &verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: verbs.AccessRemoteWrite}
	must(s.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags))
	a = &verbs.QPAttr{State: verbs.QPSRTR, PathMTU: verbs.MTU1024, DestQPN: peer.qp.QPNum(), RQPSN: 0x1234,
		MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: verbs.AHAttr{DGID: peer.dev.GID(), DPort: peer.dev.LocalAddr().Port()}}
	must(s.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRdAtomic|verbs.QPAttrMinRNRTimer))
	a = &verbs.QPAttr{State: verbs.QPSRTS, SQPSN: 0x1234, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}
	must(s.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|
		verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRdAtomic))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func Example() {
	a, b := open("127.0.0.1"), open("127.0.0.2")
	defer a.dev.Close()
	defer b.dev.Close()
	connect(a, b)
	connect(b, a)

	// b posts a receive, a sends "hello" into it.
	_, err := b.qp.PostRecv(verbs.RecvWR{ID: 1, SG: []verbs.SGE{b.mr.SGE(0, 64)}})
	must(err)
	copy(a.mr.Bytes(), "hello")
	_, err = a.qp.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{a.mr.SGE(0, 5)}})
	must(err)

	// Poll both sides (in one process each side's Poll drives its device).
	var wc [1]verbs.WC
	for b.cq.Poll(wc[:]) == 0 {
		a.dev.Progress()
	}
	fmt.Println(wc[0].Status, wc[0].Opcode, wc[0].ByteLen, string(b.mr.Bytes()[:wc[0].ByteLen]))
	for a.cq.Poll(wc[:]) == 0 {
		b.dev.Progress()
	}
	fmt.Println(wc[0].Status, wc[0].Opcode)
	// Output:
	// success RECV 5 hello
	// success SEND
}
