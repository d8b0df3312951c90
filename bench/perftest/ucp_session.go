package main

import (
	"context"
	"fmt"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

// AM ids and tags of the ucp tests.
const (
	ucpAMData = 1 // ucp_am_lat ping and pong, ucp_am_bw data
	ucpAMDone = 2 // end of a phase

	tagData = 0x7065726674657374 // "perftest"
	tagDone = tagData + 1
)

// ucpSession is one side of a ucp-level run: a context with the one
// transport of -x, a worker, an endpoint to the peer's worker and a buffer
// from the worker's memory that the peer may access. Everything the
// measured loops touch is allocated before them.
type ucpSession struct {
	cfg       *config
	test      *testDef
	initiator bool

	uc   *ucp.Context
	w    *ucp.Worker
	ep   *ucp.Endpoint
	mem  *ucp.Mem
	buf  []byte // mem.Bytes(): the peer puts into and gets from it
	rkey *ucp.RKey

	raddr   uint64
	dataLen int
	src     []byte // source of sends and puts
	dst     []byte // destination of receives and gets
	mask    uint64 // receive tag mask: all bits, or none with -C

	reqs  []*ucp.Request // outstanding operations, oldest first (a ring)
	head  int
	count int

	recv, done         int // AMs received (ucpAMData, ucpAMDone)
	recvWant, doneWant int
	seq                int
	result             uint64 // fetching atomics
	cswapOld           uint64

	sleep   bool
	waitCtx context.Context
	cancel  context.CancelFunc
	spinCheck

	meter
}

func newUCPSession(cfg *config, test *testDef, initiator bool) (_ *ucpSession, err error) {
	tr := findTransport(cfg.Transport)
	comp, err := tr.open(cfg)
	if err != nil {
		return nil, fmt.Errorf("open transport %s: %w", cfg.Transport, err)
	}
	s := &ucpSession{cfg: cfg, test: test, initiator: initiator, sleep: cfg.Wait == "sleep", mask: ^uint64(0)}
	s.pingPong = test.kind == pingPong
	if cfg.Wildcard {
		s.mask = 0
	}
	s.waitCtx, s.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	ucfg := ucp.Config{Transports: []uct.Component{comp}}
	switch cfg.ErrMode {
	case "peer":
		ucfg.ErrorMode = ucp.ErrorModePeer
	case "failover":
		ucfg.ErrorMode = ucp.ErrorModePeer
		ucfg.Failover = failover.Policy{Mode: failover.AnyTransport}
	}
	if s.uc, err = ucp.NewContext(ucfg); err != nil {
		return nil, err
	}
	if s.w, err = s.uc.NewWorker(); err != nil {
		return nil, err
	}
	sizes := test.sizes(cfg.Sizes)
	var total int
	s.dataLen, total = bufferLen(sizes)
	if s.mem, err = s.w.MemAlloc(total); err != nil {
		return nil, fmt.Errorf("buffer of %d bytes: %w", total, err)
	}
	s.buf = s.mem.Bytes()
	s.src = make([]byte, s.dataLen)
	s.dst = make([]byte, s.dataLen)
	s.reqs = make([]*ucp.Request, cfg.Window)
	// Rendezvous messages are counted when their data is in s.dst, as
	// ucx_perftest counts them after ucp_am_recv_data_nbx.
	rndvDone := &ucp.Params{Callback: func(r *ucp.Request) {
		s.recv++
		r.Release()
	}}
	s.w.SetAMHandler(ucpAMData, func(m *ucp.AMMessage) {
		if m.Rndv {
			m.RecvData(s.dst, rndvDone)
			return
		}
		s.recv++
	})
	s.w.SetAMHandler(ucpAMDone, func(*ucp.AMMessage) { s.done++ })
	return s, nil
}

func (s *ucpSession) setup() setup {
	return setup{Addr: s.w.Address(), RKey: s.mem.PackRKey(), MemAddr: s.mem.Address(), MemLen: uint64(len(s.buf))}
}

// connect connects to the peer's worker and unpacks its key.
func (s *ucpSession) connect(peer setup) error {
	if peer.MemLen < uint64(s.dataLen+64) {
		return fmt.Errorf("peer buffer of %d bytes, need %d: %w", peer.MemLen, s.dataLen+64, ErrFormat)
	}
	p := ucp.EPParams{Timeout: epTimeout}
	if s.cfg.ErrMode == "peer" {
		p.ErrorHandler = s.onError
	}
	var err error
	if s.ep, err = s.w.Connect(peer.Addr, p); err != nil {
		return fmt.Errorf("connect to peer: %w", err)
	}
	if s.rkey, err = s.ep.UnpackRKey(peer.RKey); err != nil {
		return fmt.Errorf("peer rkey: %w", err)
	}
	s.raddr = peer.MemAddr
	return nil
}

// onError is the endpoint error handler of -e peer: it ends the run.
func (s *ucpSession) onError(_ *ucp.Endpoint, err error) {
	err = fmt.Errorf("peer failure reported by ucp: %w", err)
	s.failure.CompareAndSwap(nil, &err)
	s.cancel()
}

func (s *ucpSession) Close() error {
	var err error
	for i := range s.count {
		s.reqs[(s.head+i)%len(s.reqs)].Release()
	}
	s.count = 0
	if s.rkey != nil {
		err = multierr.Append(err, s.rkey.Close())
	}
	if s.ep != nil {
		r := s.ep.Close(ucp.CloseForce)
		_ = r.Wait(context.Background())
		r.Release()
	}
	if s.mem != nil {
		err = multierr.Append(err, s.mem.Close())
	}
	if s.w != nil {
		err = multierr.Append(err, s.w.Close())
	}
	if s.uc != nil {
		err = multierr.Append(err, s.uc.Close())
	}
	if s.cancel != nil {
		s.cancel()
	}
	return err
}

func (s *ucpSession) timer() *meter { return &s.meter }

func (s *ucpSession) run(size, iters int) error { return s.test.urun(s, size, iters) }

func (s *ucpSession) zero() {
	// the counters after the data are not cleared: cswap follows them
	clear(s.buf[:s.dataLen])
	clear(s.src)
	clear(s.dst)
}

// poll progresses the worker once; in sleep mode an idle worker sleeps in
// Wait. Every 4096 idle spins it checks for a failed peer and a stall.
func (s *ucpSession) poll() error {
	if s.w.Progress() != 0 {
		s.idle = 0
		return nil
	}
	s.idle++
	if s.sleep {
		_ = s.w.Wait(s.waitCtx)
		if s.waitCtx.Err() != nil {
			return s.check()
		}
	}
	if s.idle&0xfff == 0 {
		return s.check()
	}
	return nil
}

func (s *ucpSession) check() error {
	var epErr error
	if s.ep != nil {
		epErr = s.ep.Err()
	}
	return s.spinCheck.check(s.waitCtx, epErr)
}

// wait progresses until r completes, releases it and returns its status.
func (s *ucpSession) wait(r *ucp.Request) error {
	s.idle = 0
	for !r.Done() {
		if err := s.poll(); err != nil {
			r.Cancel()
			r.Release()
			return err
		}
	}
	err := r.Err()
	r.Release()
	return err
}

// push adds r to the outstanding requests, first waiting for the oldest
// when -O are outstanding.
func (s *ucpSession) push(r *ucp.Request) error {
	if r.Done() {
		err := r.Err()
		r.Release()
		return err
	}
	if s.count == len(s.reqs) {
		if err := s.pop(); err != nil {
			r.Release()
			return err
		}
	}
	s.reqs[(s.head+s.count)%len(s.reqs)] = r
	s.count++
	return nil
}

// pop waits for the oldest outstanding request.
func (s *ucpSession) pop() error {
	r := s.reqs[s.head]
	s.reqs[s.head] = nil
	s.head = (s.head + 1) % len(s.reqs)
	s.count--
	return s.wait(r)
}

// drain waits for every outstanding request.
func (s *ucpSession) drain() error {
	var err error
	for s.count > 0 {
		if e := s.pop(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// flush drains and flushes the endpoint: every put and get is complete
// at the peer.
func (s *ucpSession) flush() error {
	if err := s.drain(); err != nil {
		return err
	}
	if err := s.wait(s.ep.Flush(nil)); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// waitCount progresses until *got reaches *want + n.
func (s *ucpSession) waitCount(want, got *int, n int) error {
	*want += n
	s.idle = 0
	for *got < *want {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return nil
}

// sendDone tells the peer that this side's phase is over.
func (s *ucpSession) sendDone() error {
	return s.wait(s.ep.AMSend(ucpAMDone, nil, nil, nil))
}
