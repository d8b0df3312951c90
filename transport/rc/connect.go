package rc

import (
	"context"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"time"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// Connection setup: the passive side's answer to a REQ (acceptCM), and
// the active side's Connect (prepareConnect, then the connection
// manager's exchange, then finishConnect), both bringing a new QP to
// RTS with connectQP.

// acceptCM answers a peer's REQ (on a connection manager goroutine):
// create a QP, connect it to the requester's and bring it to RTS.
func (it *Iface) acceptCM(req cmMsg) (cmMsg, func(), error) {
	if req.DstNonce != it.nonce {
		return cmMsg{}, nil, fmt.Errorf("rc: REQ for iface nonce %x, this is %x: %w", req.DstNonce, it.nonce, uct.ErrInvalidAddress)
	}
	if it.isClosed.Load() {
		return cmMsg{}, nil, uct.ErrClosed
	}
	qp, err := it.createQP()
	if err != nil {
		return cmMsg{}, nil, err
	}
	mtu := it.pathMTU(req.MTU)
	psn := uint32(randU64() & 0xffffff)
	if err := connectQP(qp, req.GID, req.UDPPort, req.QPN, req.PSN, psn, mtu, req.AckTimeout); err != nil {
		qp.Close()
		return cmMsg{}, nil, err
	}
	pq := &passiveQP{qp: qp, origin: req.Nonce}
	it.mu.Lock()
	if it.closed {
		it.mu.Unlock()
		qp.Close()
		return cmMsg{}, nil, uct.ErrClosed
	}
	it.passive[qp.QPNum()] = pq
	it.mu.Unlock()
	release := func() {
		it.mu.Lock()
		delete(it.passive, qp.QPNum())
		it.mu.Unlock()
		qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.QPAttrState)
		qp.Close()
	}
	return cmMsg{Type: cmREP, QPN: qp.QPNum(), PSN: psn, MTU: uint16(mtu.Bytes()), Nonce: it.nonce, Window: amWindow}, release, nil
}

func (it *Iface) pathMTU(peerBytes uint16) verbs.MTU {
	mtu := it.mtu
	for mtu > verbs.MTU256 && mtu.Bytes() > int(peerBytes) {
		mtu--
	}
	return mtu
}

func (it *Iface) createQP() (*verbs.QP, error) {
	qp, err := it.md.pd.CreateQP(verbs.QPInitAttr{SendCQ: it.cq, RecvCQ: it.cq, SRQ: it.srq,
		Cap: verbs.QPCap{MaxSendWR: sqDepth, MaxSendSGE: maxIOV + 1, MaxInlineData: it.maxInline}})
	if err != nil {
		return nil, fmt.Errorf("rc: create qp: %w", err)
	}
	err = qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1,
		AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic},
		verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
	if err != nil {
		qp.Close()
		return nil, fmt.Errorf("rc: qp to INIT: %w", err)
	}
	return qp, nil
}

// ackTimeout is the IB local ACK timeout exponent (4.096 µs · 2^t) such
// that retryCnt+1 attempts take about half of timeout, within 16 ms ..
// 4.3 s per attempt.
func ackTimeout(timeout time.Duration) uint8 {
	per := timeout / (2 * (retryCnt + 1))
	units := uint64(per / (4096 * time.Nanosecond))
	if units < 1 {
		units = 1
	}
	t := bits.Len64(units) - 1
	return uint8(min(max(t, 12), 20))
}

// connectQP brings qp from INIT to RTS towards the remote QP, with the
// local ACK timeout exponent ackTO.
func connectQP(qp *verbs.QP, gid netip.Addr, udpPort uint16, dqpn, rqpsn, sqpsn uint32, mtu verbs.MTU, ackTO uint8) error {
	err := qp.Modify(&verbs.QPAttr{State: verbs.QPSRTR, AH: verbs.AHAttr{DGID: gid, DPort: udpPort, HopLimit: 64},
		PathMTU: mtu, DestQPN: dqpn, RQPSN: rqpsn, MaxDestRdAtomic: maxRdAtomic, MinRNRTimer: minRNRTimer},
		verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|verbs.QPAttrRQPSN|
			verbs.QPAttrMaxDestRdAtomic|verbs.QPAttrMinRNRTimer)
	if err != nil {
		return fmt.Errorf("rc: qp to RTR: %w", err)
	}
	err = qp.Modify(&verbs.QPAttr{State: verbs.QPSRTS, SQPSN: sqpsn, Timeout: ackTO,
		RetryCnt: retryCnt, RNRRetry: rnrRetry, MaxRdAtomic: maxRdAtomic},
		verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRdAtomic)
	if err != nil {
		return fmt.Errorf("rc: qp to RTS: %w", err)
	}
	return nil
}

// Connect creates an endpoint to the iface at addr: a QP connected to one
// the peer creates through its connection manager. It waits for the
// peer's answer (up to params.Timeout); StartConnect does not.
func (it *Iface) Connect(addr []byte, params uct.EPParams) (uct.Endpoint, error) {
	d, err := it.prepareConnect(addr, params)
	if err != nil {
		return nil, err
	}
	conn, rep, err := cmDial(context.Background(), netip.AddrPortFrom(d.a.IP, d.a.CMPort), d.req, d.timeout)
	return it.finishConnect(d, conn, rep, err)
}

// dial is a connection on its way: the local QP and the request sent to
// the peer's connection manager.
type dial struct {
	a       Address
	peer    string
	qp      *verbs.QP
	psn     uint32
	req     cmMsg
	timeout time.Duration
}

// prepareConnect checks the iface and creates the QP of a connection to
// addr (iface goroutine).
func (it *Iface) prepareConnect(addr []byte, params uct.EPParams) (*dial, error) {
	a, err := DecodeAddress(addr)
	if err != nil {
		return nil, uct.NewOpError(transportName, "connect", "", uct.ErrInvalidAddress, err)
	}
	peer := a.String()
	if it.isClosed.Load() {
		return nil, uct.NewOpError(transportName, "connect", peer, uct.ErrClosed, nil)
	}
	if it.rdmaDisabled.Load() {
		return nil, uct.NewOpError(transportName, "connect", peer, uct.ErrLocalNICFailed, fmt.Errorf("RDMA disabled on %s", it.dev.Name()))
	}
	if it.linkDown.Load() {
		return nil, uct.NewOpError(transportName, "connect", peer, uct.ErrRouteLost, fmt.Errorf("link of %s is down", it.dev.Name()))
	}
	timeout := params.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	qp, err := it.createQP()
	if err != nil {
		return nil, uct.NewOpError(transportName, "connect", peer, uct.ErrNoResource, err)
	}
	psn := uint32(randU64() & 0xffffff)
	local := it.dev.LocalAddr()
	req := cmMsg{Type: cmREQ, GID: local.Addr(), UDPPort: local.Port(), QPN: qp.QPNum(), PSN: psn,
		MTU: uint16(it.mtu.Bytes()), Nonce: it.nonce, DstNonce: a.Nonce, Window: amWindow, AckTimeout: ackTimeout(timeout)}
	return &dial{a: a, peer: peer, qp: qp, psn: psn, req: req, timeout: timeout}, nil
}

// finishConnect makes the endpoint of d from the peer's answer (or
// dialErr), on the iface goroutine.
func (it *Iface) finishConnect(d *dial, conn *net.TCPConn, rep cmMsg, dialErr error) (uct.Endpoint, error) {
	a, peer, qp := d.a, d.peer, d.qp
	if dialErr != nil {
		qp.Close()
		return nil, uct.NewOpError(transportName, "connect", peer, uct.OK, dialErr)
	}
	if err := connectQP(qp, a.IP, a.UDPPort, rep.QPN, rep.PSN, d.psn, it.pathMTU(rep.MTU), d.req.AckTimeout); err != nil {
		conn.Close()
		qp.Close()
		return nil, uct.NewOpError(transportName, "connect", peer, uct.ErrUnreachable, err)
	}
	ep := &Endpoint{it: it, qp: qp, conn: conn, peer: a, name: fmt.Sprintf("%s qp %#x", netip.AddrPortFrom(a.IP, a.UDPPort), rep.QPN),
		credits: int(rep.Window), peerQPN: rep.QPN}
	it.mu.Lock()
	if it.closed {
		it.mu.Unlock()
		conn.Close()
		qp.Close()
		return nil, uct.NewOpError(transportName, "connect", peer, uct.ErrClosed, nil)
	}
	it.eps[qp.QPNum()] = ep
	it.mu.Unlock()
	go ep.watchLifeline()
	return ep, nil
}
