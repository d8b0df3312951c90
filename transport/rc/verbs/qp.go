package verbs

import (
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/uct"
)

// QPState is a queue pair state (ibv_qp_state).
type QPState uint8

// QP states, numbered as in ibv_qp_state.
const (
	QPSReset QPState = iota
	QPSInit
	QPSRTR
	QPSRTS
	QPSSQD
	QPSSQE
	QPSErr
)

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("qp-state(%d)", int(s))
}

// QPAttrMask says which QPAttr fields Modify uses (ibv_qp_attr_mask; same
// bit values).
type QPAttrMask uint32

const (
	QPAttrState QPAttrMask = 1 << iota
	QPAttrCurState
	QPAttrEnSQDAsyncNotify
	QPAttrAccessFlags
	QPAttrPKeyIndex
	QPAttrPort
	QPAttrQKey
	QPAttrAV
	QPAttrPathMTU
	QPAttrTimeout
	QPAttrRetryCnt
	QPAttrRNRRetry
	QPAttrRQPSN
	QPAttrMaxQPRdAtomic
	QPAttrAltPath
	QPAttrMinRNRTimer
	QPAttrSQPSN
	QPAttrMaxDestRdAtomic
	QPAttrPathMigState
	QPAttrCap
	QPAttrDestQPN
)

// AHAttr is the address vector of the remote QP (ibv_ah_attr, global
// routing only as RoCE needs it).
type AHAttr struct {
	// DGID is the remote GID: an IPv4 address, plain or IPv4-mapped.
	DGID netip.Addr
	// DPort is the remote UDP port; 0 means 4791.
	DPort    uint16
	HopLimit uint8
	SL       uint8
}

// QPCap are a QP's queue sizes (ibv_qp_cap).
type QPCap struct {
	MaxSendWR     int
	MaxRecvWR     int
	MaxSendSGE    int
	MaxRecvSGE    int
	MaxInlineData int
}

// QPAttr are a QP's attributes (ibv_qp_attr).
type QPAttr struct {
	State            QPState
	CurState         QPState
	PathMTU          MTU
	RQPSN            uint32
	SQPSN            uint32
	DestQPN          uint32
	AccessFlags      Access
	PKeyIndex        uint16
	PortNum          uint8
	AH               AHAttr
	MinRNRTimer      uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	EnSQDAsyncNotify bool
	// SQDraining is reported by Query: the QP is in SQD and still has
	// outstanding send work.
	SQDraining bool
	Cap        QPCap
}

// QPInitAttr are the creation attributes of a QP (ibv_qp_init_attr). Only
// reliable-connected QPs exist.
type QPInitAttr struct {
	SendCQ *CQ
	RecvCQ *CQ
	SRQ    *SRQ
	Cap    QPCap
	// SQSigAll generates a completion for every send WR.
	SQSigAll bool
}

// qpnLowFirst is the lowest low 16 bits of a QPN the device hands out;
// below it are QPs 0 and 1 and a few kept free, as on an HCA.
const qpnLowFirst = 0x11

// QP is a reliable-connected queue pair (ibv_qp).
type QP struct {
	d     *Device
	pd    *PD
	qpn   uint32
	scq   *CQ
	rcq   *CQ
	srq   *SRQ
	cap   QPCap
	sig   bool
	state QPState
	attr  QPAttr
	dst   netip.AddrPort // remote address
	mtu   int            // path MTU in bytes

	sqDrainNotify bool // SQD entered with EnSQDAsyncNotify; drained not reported yet
	lastWQE       bool // last WQE reached reported
	destroyed     bool

	// ready / timer list membership
	inReady bool
	inTimed bool
	inAcks  bool // in the device's deferred ACK list

	req  requester
	resp responder
	rq   recvQueue // own receive queue (no SRQ)
}

// CreateQP creates an RC QP in RESET.
func (pd *PD) CreateQP(init QPInitAttr) (*QP, error) {
	d := pd.d
	c := init.Cap
	if init.SendCQ == nil || init.RecvCQ == nil || init.SendCQ.d != d || init.RecvCQ.d != d {
		return nil, fmt.Errorf("verbs: create qp: send and receive CQs of this device are needed: %w", uct.ErrInvalidParam)
	}
	if c.MaxSendWR <= 0 || c.MaxSendWR > deviceAttr.MaxQPWR || c.MaxSendSGE < 0 || c.MaxSendSGE > deviceAttr.MaxSGE ||
		c.MaxRecvSGE < 0 || c.MaxRecvSGE > deviceAttr.MaxSGE || c.MaxInlineData < 0 || c.MaxInlineData > deviceAttr.MaxInlineData ||
		c.MaxRecvWR < 0 || c.MaxRecvWR > deviceAttr.MaxQPWR || (init.SRQ == nil && c.MaxRecvWR == 0) {
		return nil, fmt.Errorf("verbs: create qp: capabilities %+v: %w", c, uct.ErrInvalidParam)
	}
	if c.MaxSendSGE == 0 {
		c.MaxSendSGE = 1
	}
	if c.MaxRecvSGE == 0 {
		c.MaxRecvSGE = 1
	}
	if init.SRQ != nil {
		if init.SRQ.pd != pd {
			return nil, fmt.Errorf("verbs: create qp: SRQ of another PD: %w", uct.ErrInvalidParam)
		}
		c.MaxRecvWR, c.MaxRecvSGE = 0, 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || pd.closed {
		return nil, fmt.Errorf("verbs: create qp: %w", uct.ErrClosed)
	}
	if d.rdmaDisabled {
		return nil, fmt.Errorf("verbs: create qp: RDMA disabled on %s: %w", d.name, uct.ErrLocalNICFailed)
	}
	if len(d.qps) > 0xffff-qpnLowFirst {
		return nil, fmt.Errorf("verbs: create qp: %w", uct.ErrNoResource)
	}
	for {
		d.qpSeq = (d.qpSeq + 1) & 0xffff
		if d.qpSeq < qpnLowFirst {
			continue
		}
		if d.qps[d.qpBase|d.qpSeq] == nil {
			break
		}
	}
	qp := &QP{d: d, pd: pd, qpn: d.qpBase | d.qpSeq, scq: init.SendCQ, rcq: init.RecvCQ, srq: init.SRQ, cap: c, sig: init.SQSigAll}
	qp.req.init(c)
	if init.SRQ == nil {
		qp.rq.init(c.MaxRecvWR)
	} else {
		init.SRQ.users++
	}
	qp.attr.Cap = c
	qp.attr.PortNum = 1
	qp.attr.PathMTU = MTU1024
	d.qps[qp.qpn] = qp
	pd.nobj++
	qp.scq.users++
	qp.rcq.users++
	return qp, nil
}

// QPNum returns the QP number.
func (qp *QP) QPNum() uint32 { return qp.qpn }

// State returns the current state.
func (qp *QP) State() QPState {
	qp.d.mu.Lock()
	defer qp.d.mu.Unlock()
	return qp.state
}

func (qp *QP) name() string { return fmt.Sprintf("qp %#x", qp.qpn) }

// Query returns the QP's attributes (ibv_query_qp).
func (qp *QP) Query() QPAttr {
	qp.d.mu.Lock()
	defer qp.d.mu.Unlock()
	a := qp.attr
	a.State, a.CurState = qp.state, qp.state
	a.SQDraining = qp.state == QPSSQD && qp.req.outstanding()
	return a
}

// stateTransition lists the required and optional attributes of a legal
// RC transition (IBA table 91 and Linux's qp_state_table).
type stateTransition struct {
	ok       bool
	req, opt QPAttrMask
}

var qpTransitions = func() (t [QPSErr + 1][QPSErr + 1]stateTransition) {
	any := stateTransition{ok: true}
	for s := QPSReset; s <= QPSErr; s++ {
		t[s][QPSReset] = any
		t[s][QPSErr] = any
	}
	t[QPSReset][QPSInit] = stateTransition{ok: true, req: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags}
	t[QPSInit][QPSInit] = stateTransition{ok: true, opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAccessFlags}
	t[QPSInit][QPSRTR] = stateTransition{ok: true,
		req: QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer,
		opt: QPAttrAltPath | QPAttrAccessFlags | QPAttrPKeyIndex}
	t[QPSRTR][QPSRTS] = stateTransition{ok: true,
		req: QPAttrSQPSN | QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic,
		opt: QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrMinRNRTimer | QPAttrPathMigState}
	t[QPSRTS][QPSRTS] = stateTransition{ok: true,
		opt: QPAttrCurState | QPAttrAccessFlags | QPAttrAltPath | QPAttrPathMigState | QPAttrMinRNRTimer}
	t[QPSRTS][QPSSQD] = stateTransition{ok: true, opt: QPAttrEnSQDAsyncNotify}
	t[QPSSQD][QPSRTS] = stateTransition{ok: true,
		opt: QPAttrCurState | QPAttrAltPath | QPAttrAccessFlags | QPAttrMinRNRTimer | QPAttrPathMigState}
	t[QPSSQD][QPSSQD] = stateTransition{ok: true,
		opt: QPAttrPKeyIndex | QPAttrPort | QPAttrAV | QPAttrAltPath | QPAttrAccessFlags | QPAttrTimeout |
			QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic | QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer | QPAttrPathMigState}
	t[QPSSQE][QPSRTS] = stateTransition{ok: true, opt: QPAttrCurState | QPAttrAccessFlags}
	return t
}()

// unsupportedAttrs are accepted by the IB state table but not by this
// provider (no alternate path / APM; QKey is for UD).
const unsupportedAttrs = QPAttrAltPath | QPAttrPathMigState | QPAttrQKey | QPAttrCap

// Modify changes the QP's attributes and state (ibv_modify_qp). The
// transition (current state → attr.State, or the current state if mask
// lacks QPAttrState) must be legal for RC and mask must hold exactly the
// transition's required attributes plus any of its optional ones;
// otherwise Modify changes nothing and returns an error wrapping
// uct.ErrInvalidParam.
func (qp *QP) Modify(attr *QPAttr, mask QPAttrMask) error {
	d := qp.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := qp.modifyLocked(attr, mask); err != nil {
		return fmt.Errorf("verbs: modify %s: %w", qp.name(), err)
	}
	return nil
}

func (qp *QP) modifyLocked(a *QPAttr, mask QPAttrMask) error {
	if qp.destroyed {
		return uct.ErrClosed
	}
	cur := qp.state
	if mask&QPAttrCurState != 0 && a.CurState != cur {
		return fmt.Errorf("current state %v given, QP is in %v: %w", a.CurState, cur, uct.ErrInvalidParam)
	}
	next := cur
	if mask&QPAttrState != 0 {
		next = a.State
	}
	if next > QPSErr {
		return fmt.Errorf("state %v: %w", next, uct.ErrInvalidParam)
	}
	tr := qpTransitions[cur][next]
	if !tr.ok {
		return fmt.Errorf("illegal transition %v -> %v: %w", cur, next, uct.ErrInvalidParam)
	}
	attrs := mask &^ (QPAttrState | QPAttrCurState)
	if missing := tr.req &^ attrs; missing != 0 {
		return fmt.Errorf("%v -> %v needs attributes %#x: %w", cur, next, uint32(missing), uct.ErrInvalidParam)
	}
	if extra := attrs &^ (tr.req | tr.opt); extra != 0 {
		return fmt.Errorf("%v -> %v does not take attributes %#x: %w", cur, next, uint32(extra), uct.ErrInvalidParam)
	}
	if u := attrs & unsupportedAttrs; u != 0 {
		return fmt.Errorf("attributes %#x: %w", uint32(u), uct.ErrUnsupported)
	}
	if mask&QPAttrCurState != 0 && cur != QPSRTR && cur != QPSRTS && cur != QPSSQD && cur != QPSSQE {
		return fmt.Errorf("current state given in %v: %w", cur, uct.ErrInvalidParam)
	}
	if err := qp.checkAttrs(a, attrs); err != nil {
		return err
	}
	// Commit.
	n := &qp.attr
	if attrs&QPAttrAccessFlags != 0 {
		n.AccessFlags = a.AccessFlags
	}
	if attrs&QPAttrPKeyIndex != 0 {
		n.PKeyIndex = a.PKeyIndex
	}
	if attrs&QPAttrPort != 0 {
		n.PortNum = a.PortNum
	}
	if attrs&QPAttrAV != 0 {
		n.AH = a.AH
		port := a.AH.DPort
		if port == 0 {
			port = roce.Port
		}
		qp.dst = netip.AddrPortFrom(a.AH.DGID.Unmap(), port)
	}
	if attrs&QPAttrPathMTU != 0 {
		n.PathMTU = a.PathMTU
	}
	if attrs&QPAttrTimeout != 0 {
		n.Timeout = a.Timeout
	}
	if attrs&QPAttrRetryCnt != 0 {
		n.RetryCnt = a.RetryCnt
	}
	if attrs&QPAttrRNRRetry != 0 {
		n.RNRRetry = a.RNRRetry
	}
	if attrs&QPAttrRQPSN != 0 {
		n.RQPSN = a.RQPSN
	}
	if attrs&QPAttrSQPSN != 0 {
		n.SQPSN = a.SQPSN
	}
	if attrs&QPAttrMaxQPRdAtomic != 0 {
		n.MaxRdAtomic = a.MaxRdAtomic
	}
	if attrs&QPAttrMaxDestRdAtomic != 0 {
		n.MaxDestRdAtomic = a.MaxDestRdAtomic
	}
	if attrs&QPAttrMinRNRTimer != 0 {
		n.MinRNRTimer = a.MinRNRTimer
	}
	if attrs&QPAttrDestQPN != 0 {
		n.DestQPN = a.DestQPN
	}
	if attrs&QPAttrEnSQDAsyncNotify != 0 {
		n.EnSQDAsyncNotify = a.EnSQDAsyncNotify
	}
	qp.mtu = n.PathMTU.Bytes()
	qp.req.applyAttr(n, attrs)
	if cur == next {
		return nil
	}
	switch next {
	case QPSReset:
		qp.resetLocked()
	case QPSInit:
		qp.state = QPSInit
	case QPSRTR:
		qp.state = QPSRTR
		qp.resp.start(n.RQPSN, int(n.MaxDestRdAtomic))
	case QPSRTS:
		if cur == QPSRTR {
			qp.req.start(n.SQPSN)
		}
		qp.state = QPSRTS
		qp.sqDrainNotify = false
		qp.d.markReady(qp)
	case QPSSQD:
		qp.state = QPSSQD
		qp.sqDrainNotify = n.EnSQDAsyncNotify
		qp.checkDrainedLocked()
	case QPSErr:
		qp.toErrLocked()
	}
	return nil
}

func (qp *QP) checkAttrs(a *QPAttr, attrs QPAttrMask) error {
	bad := func(what string, v any) error {
		return fmt.Errorf("%s %v: %w", what, v, uct.ErrInvalidParam)
	}
	if attrs&QPAttrAccessFlags != 0 && a.AccessFlags&^(AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead|AccessRemoteAtomic) != 0 {
		return bad("access flags", a.AccessFlags)
	}
	if attrs&QPAttrPKeyIndex != 0 && a.PKeyIndex != 0 {
		return bad("pkey index", a.PKeyIndex)
	}
	if attrs&QPAttrPort != 0 && a.PortNum != 1 {
		return bad("port", a.PortNum)
	}
	if attrs&QPAttrAV != 0 {
		g := a.AH.DGID.Unmap()
		if !g.Is4() || g.IsUnspecified() {
			return bad("destination GID (only IPv4 GIDs)", a.AH.DGID)
		}
	}
	if attrs&QPAttrPathMTU != 0 && (!a.PathMTU.Valid() || a.PathMTU > qp.d.mtu) {
		return bad("path MTU (port active MTU "+qp.d.mtu.String()+")", a.PathMTU)
	}
	if attrs&QPAttrTimeout != 0 && a.Timeout > 31 {
		return bad("timeout", a.Timeout)
	}
	if attrs&QPAttrRetryCnt != 0 && a.RetryCnt > 7 {
		return bad("retry count", a.RetryCnt)
	}
	if attrs&QPAttrRNRRetry != 0 && a.RNRRetry > 7 {
		return bad("RNR retry", a.RNRRetry)
	}
	if attrs&QPAttrMinRNRTimer != 0 && a.MinRNRTimer > 31 {
		return bad("min RNR timer", a.MinRNRTimer)
	}
	if attrs&QPAttrRQPSN != 0 && a.RQPSN > roce.PSNMask {
		return bad("RQ PSN", a.RQPSN)
	}
	if attrs&QPAttrSQPSN != 0 && a.SQPSN > roce.PSNMask {
		return bad("SQ PSN", a.SQPSN)
	}
	if attrs&QPAttrDestQPN != 0 && a.DestQPN > roce.PSNMask {
		return bad("destination QPN", a.DestQPN)
	}
	if attrs&QPAttrMaxQPRdAtomic != 0 && int(a.MaxRdAtomic) > deviceAttr.MaxQPInitRdAtm {
		return bad("max rd atomic", a.MaxRdAtomic)
	}
	if attrs&QPAttrMaxDestRdAtomic != 0 && int(a.MaxDestRdAtomic) > deviceAttr.MaxQPRdAtom {
		return bad("max dest rd atomic", a.MaxDestRdAtomic)
	}
	return nil
}

// resetLocked returns the QP to RESET: queues emptied without completions.
func (qp *QP) resetLocked() {
	qp.sendDeferredAck()
	qp.state = QPSReset
	qp.req.reset()
	qp.resp.reset()
	qp.rq.clear()
	qp.lastWQE = false
	qp.sqDrainNotify = false
	qp.d.unready(qp)
}

// toErrLocked moves the QP to ERR and flushes its outstanding work.
func (qp *QP) toErrLocked() {
	if qp.state == QPSErr {
		return
	}
	qp.sendDeferredAck()
	qp.state = QPSErr
	qp.flushLocked()
}

// fatalLocked moves the QP to ERR because of an error it hit and reports
// an async event of type ev.
func (qp *QP) fatalLocked(ev uct.EventType, err error) {
	if qp.state == QPSErr || qp.state == QPSReset {
		return
	}
	qp.toErrLocked()
	qp.d.postEvent(ev, qp.name(), qp, err)
}

// flushLocked completes every outstanding WR with WRFlushErr.
func (qp *QP) flushLocked() {
	qp.req.flush(qp)
	qp.resp.reset()
	if qp.srq == nil {
		for {
			w, ok := qp.rq.pop()
			if !ok {
				break
			}
			qp.rcq.pushLocked(&WC{WRID: w.id, Status: WCWRFlushErr, Opcode: WCRecv, QPNum: qp.qpn})
		}
	} else if !qp.lastWQE {
		qp.lastWQE = true
		qp.d.postEvent(uct.EventQPLastWQEReached, qp.name(), qp, nil)
	}
	qp.d.unready(qp)
}

// checkDrainedLocked reports SQ drained once a QP in SQD has no
// outstanding send work.
func (qp *QP) checkDrainedLocked() {
	if qp.state == QPSSQD && qp.sqDrainNotify && !qp.req.outstanding() {
		qp.sqDrainNotify = false
		qp.d.postEvent(uct.EventSQDrained, qp.name(), qp, nil)
	}
}

// destroy releases the QP, once; after it the QP posts no async events.
// Outstanding work is dropped without completions.
func (qp *QP) destroy() {
	d := qp.d
	d.mu.Lock()
	if qp.destroyed {
		d.mu.Unlock()
		return
	}
	qp.sendDeferredAck()
	qp.destroyed = true
	qp.state = QPSReset
	qp.req.reset()
	qp.resp.reset()
	d.unready(qp)
	delete(d.qps, qp.qpn)
	qp.pd.nobj--
	qp.scq.users--
	qp.rcq.users--
	if qp.srq != nil {
		qp.srq.users--
	}
	d.mu.Unlock()
}

// PostRecv posts receive work requests (ibv_post_recv). It returns how
// many were posted and, if not all, why the next one was refused. In ERR
// they complete at once with WRFlushErr.
func (qp *QP) PostRecv(wrs ...RecvWR) (int, error) {
	if qp.srq != nil {
		return 0, fmt.Errorf("verbs: post recv %s: QP uses an SRQ: %w", qp.name(), uct.ErrInvalidParam)
	}
	d := qp.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if qp.destroyed {
		return 0, fmt.Errorf("verbs: post recv %s: %w", qp.name(), uct.ErrClosed)
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SG) > qp.cap.MaxRecvSGE {
			return i, fmt.Errorf("verbs: post recv %s: %d SGEs > %d: %w", qp.name(), len(wr.SG), qp.cap.MaxRecvSGE, uct.ErrInvalidParam)
		}
		if qp.state == QPSErr {
			qp.rcq.pushLocked(&WC{WRID: wr.ID, Status: WCWRFlushErr, Opcode: WCRecv, QPNum: qp.qpn})
			continue
		}
		if qp.state == QPSReset {
			return i, fmt.Errorf("verbs: post recv %s in RESET: %w", qp.name(), uct.ErrInvalidParam)
		}
		if !qp.rq.push(wr) {
			return i, fmt.Errorf("verbs: post recv %s: queue full: %w", qp.name(), uct.ErrNoResource)
		}
	}
	return len(wrs), nil
}

// recvWQE is a posted receive.
type recvWQE struct {
	id uint64
	sg []SGE
}

// recvQueue is a ring of receive WQEs.
type recvQueue struct {
	ring []recvWQE
	head int
	n    int
}

func (q *recvQueue) init(n int) { q.ring = make([]recvWQE, n) }

func (q *recvQueue) push(wr *RecvWR) bool {
	if q.n == len(q.ring) {
		return false
	}
	i := (q.head + q.n) % len(q.ring)
	e := &q.ring[i]
	e.id = wr.ID
	e.sg = append(e.sg[:0], wr.SG...)
	q.n++
	return true
}

func (q *recvQueue) pop() (recvWQE, bool) {
	if q.n == 0 {
		return recvWQE{}, false
	}
	// The slot keeps its SGE storage for the next push: the taker reads
	// the SGEs only at once (resolving them), never after later pushes.
	e := q.ring[q.head]
	if len(e.sg) == 0 {
		e.sg = nil
	}
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	return e, true
}

func (q *recvQueue) clear() {
	for q.n > 0 {
		q.pop()
	}
}
