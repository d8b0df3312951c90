package verbs

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/roce"
)

// rawPeer is a RoCEv2 requester made of a plain UDP socket: the test
// writes each request packet itself and reads the responder's answers.
type rawPeer struct {
	t    *testing.T
	conn *net.UDPConn
	src  netip.AddrPort // the socket's address
	dst  netip.AddrPort // the device's
	qpn  uint32         // the device QP's number
}

func (r *rawPeer) send(op roce.Opcode, psn uint32, ackReq bool, payload []byte) {
	r.t.Helper()
	p := roce.Packet{BTH: roce.BTH{Opcode: op, PKey: roce.PKeyDefault, DestQP: r.qpn, PSN: psn, AckReq: ackReq}, Payload: payload}
	if _, err := r.conn.WriteToUDPAddrPort(roce.Append(nil, &p, r.src, r.dst), r.dst); err != nil {
		r.t.Fatal(err)
	}
}

// acksUntil runs d's engine and reads the responder's packets until an
// ACK for psn arrives; it returns the PSNs of the ACKs before it.
func (r *rawPeer) acksUntil(d *Device, psn uint32) []uint32 {
	r.t.Helper()
	var got []uint32
	buf := make([]byte, 9000)
	deadline := time.Now().Add(testTimeout)
	for {
		d.Progress()
		if err := r.conn.SetReadDeadline(time.Now().Add(2 * time.Millisecond)); err != nil {
			r.t.Fatal(err)
		}
		n, _, err := r.conn.ReadFromUDPAddrPort(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if time.Now().After(deadline) {
				r.t.Fatalf("no ACK for PSN %d; ACKs before: %v", psn, got)
			}
			continue
		}
		if err != nil {
			r.t.Fatal(err)
		}
		var p roce.Packet
		if err := roce.Decode(buf[:n], &p); err != nil {
			r.t.Fatal(err)
		}
		if p.BTH.Opcode != roce.OpAcknowledge || p.AETH.Kind() != roce.AckACK {
			r.t.Fatalf("got %v (AETH %#x), want ACKs only", p.BTH.Opcode, p.AETH.Syndrome)
		}
		if p.BTH.PSN == psn {
			return got
		}
		got = append(got, p.BTH.PSN)
	}
}

// processed runs d's engine until it has counted n duplicates: the
// answer to the last one, if any, is then on the wire.
func processed(t *testing.T, d *Device, n uint64) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for d.Progress(); d.Counters().DuplicatesRcvd < n; d.Progress() {
		if time.Now().After(deadline) {
			t.Fatalf("%d duplicates counted, want %d", d.Counters().DuplicatesRcvd, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestDuplicateSendAck: a retransmitted SEND that the responder has
// executed is ACKed again only where a packet asks for it (AckReq), each
// time with that packet's PSN, never with a later one that ends a
// message; while a message is being received, with the latest PSN. rdma_rxe resends
// a SEND its early timer took for lost; an ACK of the SEND's last PSN
// arriving while it resends makes it complete the WQE under its
// requester's feet, and with rc_pingpong's one-entry send queue its
// requester then never sends again (bench/rcpingpong's rxe quirks).
// Until this was found, every duplicate packet drew an ACK of the
// latest PSN.
func TestDuplicateSendAck(t *testing.T) {
	d := openDevCfg(t, Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: -1})
	o := rigOpts{}
	o.defaults()
	e := newEnd(t, d, o)
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	peer := &rawPeer{t: t, conn: conn, src: conn.LocalAddr().(*net.UDPAddr).AddrPort(), dst: d.LocalAddr(), qpn: e.qp.QPNum()}
	const rqPSN, peerQPN = 1000, 0x77
	a := QPAttr{State: QPSInit, PortNum: 1}
	if err := e.qp.Modify(&a, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	a = QPAttr{State: QPSRTR, PathMTU: MTU1024, DestQPN: peerQPN, RQPSN: rqPSN, MaxDestRdAtomic: 1,
		AH: AHAttr{DGID: peer.src.Addr(), DPort: peer.src.Port()}}
	if err := e.qp.Modify(&a, QPAttrState|QPAttrAV|QPAttrPathMTU|QPAttrDestQPN|QPAttrRQPSN|QPAttrMaxDestRdAtomic|QPAttrMinRNRTimer); err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if _, err := e.qp.PostRecv(RecvWR{ID: id, SG: []SGE{e.mr.SGE(int(id)<<12, 4096)}}); err != nil {
			t.Fatal(err)
		}
	}

	// A 3-packet SEND asking for an ACK in the middle (as rxe does every
	// 65 packets) and at the end.
	mtu := make([]byte, 1024)
	msg := []struct {
		op     roce.Opcode
		ackReq bool
		data   []byte
	}{
		{roce.OpSendFirst, false, mtu},
		{roce.OpSendMiddle, true, mtu},
		{roce.OpSendLast, true, mtu[:100]},
	}
	for k, m := range msg {
		peer.send(m.op, rqPSN+uint32(k), m.ackReq, m.data)
	}
	peer.acksUntil(d, rqPSN+2)
	if wc := poll(t, e.cq, 1, d)[0]; wc.Status != WCSuccess || wc.ByteLen != 2148 {
		t.Fatalf("receive completed %+v, want 2148 bytes", wc)
	}

	// The whole SEND again, one packet at a time, then a new message.
	for k, m := range msg {
		peer.send(m.op, rqPSN+uint32(k), m.ackReq, m.data)
		processed(t, d, uint64(k+1))
	}
	peer.send(roce.OpSendOnly, rqPSN+3, true, mtu[:8])
	got := peer.acksUntil(d, rqPSN+3)
	want := []uint32{rqPSN + 1, rqPSN + 2}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ACKs of the resent SEND: PSNs %v, want %v (one per AckReq, its own PSN)", got, want)
	}
	if wc := poll(t, e.cq, 1, d)[0]; wc.Status != WCSuccess || wc.ByteLen != 8 || wc.WRID != 2 {
		t.Fatalf("second receive completed %+v, want WR 2 with 8 bytes", wc)
	}

	// In the middle of a message, the latest PSN ends no message: a
	// duplicate asking for an ACK gets it, so that the requester skips
	// ahead.
	if _, err := e.qp.PostRecv(RecvWR{ID: 3, SG: []SGE{e.mr.SGE(3<<12, 4096)}}); err != nil {
		t.Fatal(err)
	}
	peer.send(roce.OpSendFirst, rqPSN+4, false, mtu)
	peer.send(roce.OpSendMiddle, rqPSN+1, true, mtu)
	processed(t, d, 4)
	peer.send(roce.OpSendLast, rqPSN+5, true, mtu[:1])
	got = peer.acksUntil(d, rqPSN+5)
	if len(got) != 1 || got[0] != rqPSN+4 {
		t.Errorf("ACKs of a duplicate in the middle of a message: PSNs %v, want [%d]", got, rqPSN+4)
	}
	if wc := poll(t, e.cq, 1, d)[0]; wc.Status != WCSuccess || wc.ByteLen != 1025 || wc.WRID != 3 {
		t.Fatalf("third receive completed %+v, want WR 3 with 1025 bytes", wc)
	}
	noMore(t, e.cq, d)
}
