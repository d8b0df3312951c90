package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// ourPeer is an rcPeer on ucgo's verbs, set up as rxepeer.c sets up its
// rdma-core QP: one PD, one MR (local write, remote write, read and
// atomic), a send and a receive CQ, one RC QP in INIT with remote write,
// read and atomic access; a wait for a completion gives up after wait.
type ourPeer struct {
	name string
	dev  *verbs.Device
	pd   *verbs.PD
	mr   *verbs.MR
	scq  *verbs.CQ
	rcq  *verbs.CQ
	qp   *verbs.QP
	psn  uint32
	rkey uint32
	va   uint64
	wait time.Duration
	id   uint64
}

const accessAll = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic

func newOurPeer(name string, dev *verbs.Device, size int) (*ourPeer, error) {
	p := &ourPeer{name: name, dev: dev, psn: rand.Uint32() & 0xffffff, wait: 20 * time.Second}
	err := p.setup(size)
	if err != nil {
		err = multierr.Append(fmt.Errorf("%s: %w", name, err), p.Close())
	}
	return p, err
}

func (p *ourPeer) setup(size int) error {
	var err error
	if p.pd, err = p.dev.AllocPD(); err != nil {
		return err
	}
	if p.mr, err = p.pd.RegMR(make([]byte, size), accessAll); err != nil {
		return err
	}
	if p.scq, err = p.dev.CreateCQ(256, nil); err != nil {
		return err
	}
	if p.rcq, err = p.dev.CreateCQ(256, nil); err != nil {
		return err
	}
	p.qp, err = p.pd.CreateQP(verbs.QPInitAttr{SendCQ: p.scq, RecvCQ: p.rcq,
		Cap: verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 128, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	a := &verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: accessAll &^ verbs.AccessLocalWrite}
	return p.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags)
}

func (p *ourPeer) Name() string { return p.name }

func (p *ourPeer) Key() (peerKey, error) {
	return peerKey{QPN: p.qp.QPNum(), PSN: p.psn, RKey: p.mr.RKey(), VAddr: p.mr.Addr(), GID: p.dev.GID().As16()}, nil
}

func (p *ourPeer) Connect(k peerKey, c connParams) error {
	mtu, ok := roce.MTUOf(c.MTU)
	if !ok {
		return fmt.Errorf("%s: MTU %d", p.name, c.MTU)
	}
	a := &verbs.QPAttr{State: verbs.QPSRTR, PathMTU: mtu, DestQPN: k.QPN, RQPSN: k.PSN,
		MaxDestRdAtomic: c.RdAtomic, MinRNRTimer: c.MinRNR,
		AH: verbs.AHAttr{DGID: netip.AddrFrom16(k.GID), HopLimit: 1}}
	if err := p.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRdAtomic|verbs.QPAttrMinRNRTimer); err != nil {
		return fmt.Errorf("%s: modify RTR: %w", p.name, err)
	}
	a = &verbs.QPAttr{State: verbs.QPSRTS, SQPSN: p.psn, Timeout: c.Timeout, RetryCnt: c.Retry,
		RNRRetry: c.RNRRetry, MaxRdAtomic: c.RdAtomic}
	if err := p.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrSQPSN|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|
		verbs.QPAttrRNRRetry|verbs.QPAttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("%s: modify RTS: %w", p.name, err)
	}
	p.rkey, p.va = k.RKey, k.VAddr
	return nil
}

// buf returns the registered memory after a pass of the engine (under
// its lock), so that what the engine wrote for the peer is seen.
func (p *ourPeer) buf() []byte {
	p.dev.Progress()
	return p.mr.Bytes()
}

func (p *ourPeer) Fill(seed uint32) error {
	b := p.buf()
	for i := range b {
		b[i] = pattern(i, seed)
	}
	p.dev.Progress() // the engine sees the writes after this lock
	return nil
}

func (p *ourPeer) Set(off int, v []byte) error {
	b := p.buf()
	if off < 0 || off+len(v) > len(b) {
		return fmt.Errorf("%s: set %d+%d out of range", p.name, off, len(v))
	}
	copy(b[off:], v)
	p.dev.Progress() // the engine sees the writes after this lock
	return nil
}

func (p *ourPeer) Dump(off, n int) ([]byte, error) {
	b := p.buf()
	if off < 0 || off+n > len(b) {
		return nil, fmt.Errorf("%s: dump %d+%d out of range", p.name, off, n)
	}
	return append([]byte(nil), b[off:off+n]...), nil
}

// post posts one signaled send WR.
func (p *ourPeer) post(op string, loff, roff, n int, keyXor uint32, a1, a2 uint64) error {
	p.id++
	wr := verbs.SendWR{ID: p.id, Flags: verbs.SendSignaled, SG: []verbs.SGE{p.mr.SGE(loff, n)},
		RemoteAddr: p.va + uint64(roff), RKey: p.rkey ^ keyXor}
	switch op {
	case "write":
		wr.Opcode = verbs.WRRDMAWrite
	case "read":
		wr.Opcode = verbs.WRRDMARead
	case "cas":
		wr.Opcode, wr.CompareAdd, wr.Swap = verbs.WRAtomicCmpAndSwp, a1, a2
	case "fadd":
		wr.Opcode, wr.CompareAdd = verbs.WRAtomicFetchAndAdd, a1
	case "send":
		wr.Opcode = verbs.WRSend
		if a1 != ^uint64(0) {
			wr.Opcode, wr.Imm = verbs.WRSendWithImm, uint32(a1)
		}
		wr.RemoteAddr, wr.RKey = 0, 0
	default:
		return fmt.Errorf("op %q", op)
	}
	if _, err := p.qp.PostSend(wr); err != nil {
		return fmt.Errorf("%s: post %s: %w", p.name, op, err)
	}
	return nil
}

func (p *ourPeer) Op(op string, loff, roff, n int, keyXor uint32, a1, a2 uint64) (wcResult, error) {
	if err := p.post(op, loff, roff, n, keyXor, a1, a2); err != nil {
		return wcResult{}, err
	}
	return p.waitWC(p.scq)
}

// waitWC waits up to p.wait for one completion on cq.
func (p *ourPeer) waitWC(cq *verbs.CQ) (wcResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.wait)
	defer cancel()
	var wc [1]verbs.WC
	for cq.Poll(wc[:]) == 0 {
		if err := p.dev.Wait(ctx); err != nil {
			return wcResult{}, fmt.Errorf("%s: no completion in time: %w", p.name, err)
		}
	}
	w := wc[0]
	r := wcResult{Status: int(w.Status), Name: w.Status.String(), Vendor: w.VendorErr, Opcode: int(w.Opcode),
		ByteLen: w.ByteLen, Imm: -1}
	if w.Flags&verbs.WCWithImm != 0 {
		r.Imm = int64(int32(w.Imm))
	}
	return r, nil
}

func (p *ourPeer) PostRecv(off, n int) error {
	p.id++
	if _, err := p.qp.PostRecv(verbs.RecvWR{ID: p.id, SG: []verbs.SGE{p.mr.SGE(off, n)}}); err != nil {
		return fmt.Errorf("%s: post recv: %w", p.name, err)
	}
	return nil
}

func (p *ourPeer) WaitRecv() (wcResult, error) { return p.waitWC(p.rcq) }

// Close destroys the peer's objects (not the device).
func (p *ourPeer) Close() error {
	var err error
	if p.qp != nil {
		err = multierr.Append(err, p.qp.Close())
	}
	for _, cq := range []*verbs.CQ{p.scq, p.rcq} {
		if cq != nil {
			err = multierr.Append(err, cq.Close())
		}
	}
	if p.mr != nil {
		err = multierr.Append(err, p.mr.Dereg())
	}
	if p.pd != nil {
		err = multierr.Append(err, p.pd.Close())
	}
	return err
}
