package verbs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// testTimeout bounds every wait of the tests; generous for a loaded
// 2-core machine.
const testTimeout = 30 * time.Second

// end is one side of a loopback connection: device, PD, CQ, QP and a
// registered buffer.
type end struct {
	d   *Device
	pd  *PD
	cq  *CQ
	qp  *QP
	mr  *MR
	buf []byte
}

type rigOpts struct {
	bufSize  int
	cqe      int
	sendWR   int
	recvWR   int
	srq      *SRQAttr
	access   Access
	mtu      MTU
	sqPSN    uint32
	rqPSN    uint32
	timeout  uint8
	retry    uint8
	rnrRetry uint8
	rnrTimer uint8
	maxRd    uint8
	sigAll   bool
	// noWatchdog opens the devices without the background progress
	// goroutine, so that only the test's own calls run the engine.
	noWatchdog bool
}

func (o *rigOpts) defaults() {
	if o.bufSize == 0 {
		o.bufSize = 1 << 20
	}
	if o.cqe == 0 {
		o.cqe = 4096
	}
	if o.sendWR == 0 {
		o.sendWR = 256
	}
	if o.recvWR == 0 {
		o.recvWR = 256
	}
	if o.access == 0 {
		o.access = accessAll
	}
	if o.mtu == 0 {
		o.mtu = MTU1024
	}
	if o.timeout == 0 {
		// 67 ms: eight of them (retry 7) outlast the stalls of a loaded
		// machine under -race, where 16.8 ms once let a READ exhaust its
		// retries. Tests of retry exhaustion set their own.
		o.timeout = 14
	}
	if o.retry == 0 {
		o.retry = 7
	}
	if o.maxRd == 0 {
		o.maxRd = 16
	}
}

func openDev(t testing.TB, addr string) *Device {
	t.Helper()
	return openDevCfg(t, Config{Addr: netip.MustParseAddr(addr), Port: -1})
}

func openDevCfg(t testing.TB, cfg Config) *Device {
	t.Helper()
	d, err := Open(cfg)
	if err != nil {
		t.Fatalf("open %s: %v", cfg.Addr, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close device: %v", err)
		}
	})
	return d
}

func newEnd(t testing.TB, d *Device, o rigOpts) *end {
	t.Helper()
	e := &end{d: d}
	var err error
	if e.pd, err = d.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = d.CreateCQ(o.cqe, nil); err != nil {
		t.Fatal(err)
	}
	e.buf = make([]byte, o.bufSize)
	if e.mr, err = e.pd.RegMR(e.buf, accessAll); err != nil {
		t.Fatal(err)
	}
	init := QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq, SQSigAll: o.sigAll,
		Cap: QPCap{MaxSendWR: o.sendWR, MaxRecvWR: o.recvWR, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 256}}
	if o.srq != nil {
		s, err := e.pd.CreateSRQ(*o.srq)
		if err != nil {
			t.Fatal(err)
		}
		init.SRQ = s
	}
	if e.qp, err = e.pd.CreateQP(init); err != nil {
		t.Fatal(err)
	}
	return e
}

// toRTS moves e.qp through INIT and RTR to RTS towards peer.
func toRTS(t testing.TB, e, peer *end, o rigOpts, sqPSN, rqPSN uint32) {
	t.Helper()
	a := QPAttr{State: QPSInit, PKeyIndex: 0, PortNum: 1, AccessFlags: o.access}
	if err := e.qp.Modify(&a, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	pa := peer.d.LocalAddr()
	a = QPAttr{State: QPSRTR, PathMTU: o.mtu, DestQPN: peer.qp.QPNum(), RQPSN: rqPSN, MaxDestRdAtomic: o.maxRd,
		MinRNRTimer: o.rnrTimer, AH: AHAttr{DGID: peer.d.GID(), DPort: pa.Port()}}
	if err := e.qp.Modify(&a, QPAttrState|QPAttrAV|QPAttrPathMTU|QPAttrDestQPN|QPAttrRQPSN|QPAttrMaxDestRdAtomic|QPAttrMinRNRTimer); err != nil {
		t.Fatal(err)
	}
	a = QPAttr{State: QPSRTS, SQPSN: sqPSN, Timeout: o.timeout, RetryCnt: o.retry, RNRRetry: o.rnrRetry, MaxRdAtomic: o.maxRd}
	if err := e.qp.Modify(&a, QPAttrState|QPAttrSQPSN|QPAttrTimeout|QPAttrRetryCnt|QPAttrRNRRetry|QPAttrMaxQPRdAtomic); err != nil {
		t.Fatal(err)
	}
}

// pair builds two connected ends on 127.0.0.1 and 127.0.0.2.
func pair(t testing.TB, o rigOpts) (a, b *end) {
	t.Helper()
	o.defaults()
	iv := time.Duration(0)
	if o.noWatchdog {
		iv = -1
	}
	da := openDevCfg(t, Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: iv})
	db := openDevCfg(t, Config{Addr: netip.MustParseAddr("127.0.0.2"), Port: -1, ProgressInterval: iv})
	a, b = newEnd(t, da, o), newEnd(t, db, o)
	toRTS(t, a, b, o, o.sqPSN, o.rqPSN)
	toRTS(t, b, a, o, o.rqPSN, o.sqPSN)
	return a, b
}

// poll drives both devices until cq has n completions or the timeout.
func poll(t testing.TB, cq *CQ, n int, devs ...*Device) []WC {
	t.Helper()
	wcs := make([]WC, 0, n)
	buf := make([]WC, 64)
	deadline := time.Now().Add(testTimeout)
	for len(wcs) < n {
		for _, d := range devs {
			d.Progress()
		}
		k := cq.Poll(buf[:min(len(buf), n-len(wcs))])
		wcs = append(wcs, buf[:k]...)
		if k == 0 && time.Now().After(deadline) {
			t.Fatalf("timed out with %d of %d completions: %+v", len(wcs), n, wcs)
		}
	}
	return wcs
}

// noMore checks that no completion arrives on cq while the devices run
// for a little while.
func noMore(t testing.TB, cq *CQ, devs ...*Device) {
	t.Helper()
	var wc [4]WC
	for i := 0; i < 20; i++ {
		for _, d := range devs {
			d.Progress()
		}
		if n := cq.Poll(wc[:]); n > 0 {
			t.Fatalf("unexpected completions %+v", wc[:n])
		}
		time.Sleep(time.Millisecond)
	}
}

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func checkWC(t testing.TB, wc WC, id uint64, st WCStatus, op WCOpcode) {
	t.Helper()
	if wc.WRID != id || wc.Status != st || wc.Opcode != op {
		t.Fatalf("completion %+v (status %v), want wr %d %v %v", wc, wc.Status, id, st, op)
	}
}

func sameBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d bytes differ from byte %d on (len %d, want %d)", what, len(got), i, len(got), len(want))
	}
}

// nextEvent waits for an async event of type typ on d, acking it and
// any others before it.
func nextEvent(t testing.TB, d *Device, typ uct.EventType, devs ...*Device) *uct.Event {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		for _, x := range devs {
			x.Progress()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		ev, err := d.Events().Get(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != nil {
			t.Fatalf("get event: %v", err)
		}
		ev.Ack()
		if ev.Type == typ {
			return ev
		}
		t.Logf("event %v", ev)
	}
	t.Fatalf("no %v event", typ)
	return nil
}

func label(op WROpcode, n int) string { return fmt.Sprintf("%v/%d", op, n) }

func netipMustV6() netip.Addr { return netip.MustParseAddr("2001:db8::1") }
