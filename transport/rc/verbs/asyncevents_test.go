package verbs

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/uct"
)

// Each test here makes the condition behind one async event of RoCE
// happen and checks the event.

// TestEventCommEstablished: a QP still in RTR receives its first request.
func TestEventCommEstablished(t *testing.T) {
	o := rigOpts{}
	o.defaults()
	da := openDevCfg(t, Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: -1})
	db := openDevCfg(t, Config{Addr: netip.MustParseAddr("127.0.0.2"), Port: -1, ProgressInterval: -1})
	a, b := newEnd(t, da, o), newEnd(t, db, o)
	toRTS(t, a, b, o, 0, 0)
	// b: INIT and RTR only.
	attr := QPAttr{State: QPSInit, PortNum: 1, AccessFlags: o.access}
	if err := b.qp.Modify(&attr, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	pa := da.LocalAddr()
	attr = QPAttr{State: QPSRTR, PathMTU: o.mtu, DestQPN: a.qp.QPNum(), MaxDestRdAtomic: o.maxRd,
		AH: AHAttr{DGID: da.GID(), DPort: pa.Port()}}
	if err := b.qp.Modify(&attr, QPAttrState|QPAttrAV|QPAttrPathMTU|QPAttrDestQPN|QPAttrRQPSN|QPAttrMaxDestRdAtomic|QPAttrMinRNRTimer); err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.PostRecv(RecvWR{ID: 1, SG: []SGE{b.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend(SendWR{ID: 2, Opcode: WRSend, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, 16)}}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, db, uct.EventCommEstablished, da, db)
	if ev.Owner != b.qp {
		t.Fatalf("event %v owned by %v", ev, ev.Owner)
	}
}

// TestEventLastWQEReached: a QP attached to an SRQ enters ERR.
func TestEventLastWQEReached(t *testing.T) {
	_, b := pair(t, rigOpts{srq: &SRQAttr{MaxWR: 16, MaxSGE: 1}})
	if err := b.qp.Modify(&QPAttr{State: QPSErr}, QPAttrState); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, b.d, uct.EventQPLastWQEReached, b.d)
	if ev.Owner != b.qp {
		t.Fatalf("event %v owned by %v", ev, ev.Owner)
	}
}

// TestEventCorruptPacket: datagrams with a bad ICRC reach the device: an
// event says so (once a second however many arrive), not only a counter.
func TestEventCorruptPacket(t *testing.T) {
	d := openDevCfg(t, Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: -1})
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(d.LocalAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pkt := make([]byte, 12+4+16) // BTH, payload, a wrong ICRC
	pkt[0] = 0x04                // RC SEND only
	for i := 0; i < 5; i++ {
		if _, err := c.Write(pkt); err != nil {
			t.Fatal(err)
		}
	}
	ev := nextEvent(t, d, uct.EventCorruptPacket, d)
	if !errors.Is(ev.Err, uct.ErrDataCorrupt) || ev.Owner != d {
		t.Fatalf("event %v owned by %v, want a data-corrupt error of the device", ev, ev.Owner)
	}
	deadline := time.Now().Add(testTimeout)
	for d.Counters().RxICRCErrors < 5 && time.Now().Before(deadline) {
		d.Progress()
	}
	if n := d.Events().Len(); n != 0 {
		t.Fatalf("%d more events within a second of the first", n)
	}
}

// TestEventDeviceFatal: the device's socket dies (its descriptor no longer
// names a socket): the device posts device fatal, its QPs go to ERR and it
// refuses new QPs.
func TestEventDeviceFatal(t *testing.T) {
	a, _ := pair(t, rigOpts{noWatchdog: true})
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := unix.Dup3(int(null.Fd()), a.d.Fd(), unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, a.d, uct.EventDeviceFatal, a.d)
	if !errors.Is(ev.Err, uct.ErrLocalNICFailed) || ev.Owner != a.d {
		t.Fatalf("event %v owned by %v", ev, ev.Owner)
	}
	if s := a.qp.State(); s != QPSErr {
		t.Fatalf("QP in %v after the device died", s)
	}
	if _, err := a.pd.CreateQP(QPInitAttr{SendCQ: a.cq, RecvCQ: a.cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); !errors.Is(err, uct.ErrLocalNICFailed) {
		t.Fatalf("create QP on a dead device: %v", err)
	}
}

// TestEventGIDChange: an address is added to the device's netdev.
func TestEventGIDChange(t *testing.T) {
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	d := openIn(t, pair.A)
	extra := netip.PrefixFrom(pair.A.Addr().Next().Next().Next(), 24)
	if err := pair.A.AddAddr(extra); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, d, uct.EventGIDChange, d)
	if ev.Owner != d {
		t.Fatalf("event %v owned by %v", ev, ev.Owner)
	}
}
