package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/uct"
)

// AM ids of the uct tests.
const (
	amPing = 1 // am_lat ping and pong
	amData = 2 // am_bw data
	amDone = 3 // end of a phase
	amAck  = 4 // am_bw flow-control acknowledgement
)

// epTimeout is the transports' endpoint timeout (rc: about half of it is
// spent in retransmissions before retry exceeded): long, so that a
// benchmark on an overloaded machine does not fail when a side is starved
// of CPU for seconds. A dead peer is still seen at once (rc: the
// connection manager's link ends).
const epTimeout = 30 * time.Second

// stallTimeout bounds one wait of the polling loop (one iteration, one
// flush) before the run is declared stuck.
const stallTimeout = 60 * time.Second

// oob is the out-of-band channel between the two sides: TCP or PMI.
type oob interface {
	// exchange sends mine and returns the peer's setup.
	exchange(mine setup) (setup, error)
	// barrier returns when both sides reached it.
	barrier() error
	Close() error
}

// session is one side of a uct-level run: an iface, one endpoint to the
// peer and a buffer the peer may access, plus the counters the tests poll.
// Everything the measured loops touch is allocated before them.
type session struct {
	cfg       *config
	test      *testDef
	initiator bool

	md   uct.MD
	it   uct.Iface
	ep   uct.Endpoint
	attr uct.IfaceAttr
	mem  uct.Mem
	buf  []byte // mem.Bytes(): the peer writes, reads and adds here

	rkey    uct.RKey
	raddr   uint64
	dataLen int // bytes of buf for data; counters follow
	ctrOff  int // add_lat counter; fadd/cswap word at ctrOff+8

	src []byte // source of puts and AMs
	dst []byte // destination of gets

	recv, done         int // AMs received (amPing/amData, amDone)
	recvWant, doneWant int // ... and expected so far
	ctrWant            uint64
	seq                int  // put_lat and add_lat sequence
	fc                 amFC // am_bw flow control
	cswapOld           uint64
	result             uint64

	comps       []uct.Completion
	iovs        [][][]byte
	free        []int
	outstanding int
	flushComp   uct.Completion
	flushed     bool

	sleep  bool
	ctx    context.Context
	cancel context.CancelFunc
	spinCheck

	meter
}

func bufferLen(sizes []int) (dataLen, total int) {
	for _, s := range sizes {
		dataLen = max(dataLen, s)
	}
	dataLen = (dataLen + 63) &^ 63
	total = (dataLen + 64 + 4095) &^ 4095
	return dataLen, total
}

// newSession opens the transport's md and iface and a buffer for the
// peer; connect completes it with the peer's setup.
func newSession(cfg *config, test *testDef, initiator bool) (_ *session, err error) {
	tr := findTransport(cfg.Transport)
	comp, err := tr.open(cfg)
	if err != nil {
		return nil, fmt.Errorf("open transport %s: %w", cfg.Transport, err)
	}
	s := &session{cfg: cfg, test: test, initiator: initiator, sleep: cfg.Wait == "sleep"}
	s.pingPong = test.kind == pingPong
	s.ctx, s.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.md, err = comp.OpenMD(uct.MDParams{}); err != nil {
		return nil, fmt.Errorf("open memory domain: %w", err)
	}
	p := uct.IfaceParams{}
	if cfg.ErrMode == "peer" {
		p.ErrorHandler = s.onError
	}
	if s.it, err = s.md.OpenIface(p); err != nil {
		return nil, fmt.Errorf("open iface: %w", err)
	}
	s.attr = s.it.Attr()
	if !s.attr.Cap.Has(test.need) {
		return nil, fmt.Errorf("test %s on %s: the iface lacks capabilities %#x: %w", test.name, cfg.Transport, uint64(test.need&^s.attr.Cap), uct.ErrUnsupported)
	}
	sizes := test.sizes(cfg.Sizes)
	for _, sz := range sizes {
		if err := s.checkSize(sz); err != nil {
			return nil, err
		}
	}
	var total int
	s.dataLen, total = bufferLen(sizes)
	s.ctrOff = s.dataLen
	ma := s.md.Attr()
	if ma.CanAlloc {
		s.mem, err = s.md.Alloc(total, uct.AccessAll)
	} else {
		s.mem, err = s.md.Register(make([]byte, total), uct.AccessAll)
	}
	if err != nil {
		return nil, fmt.Errorf("buffer of %d bytes: %w", total, err)
	}
	s.buf = s.mem.Bytes()
	s.src = make([]byte, s.dataLen)
	s.dst = make([]byte, s.dataLen)
	w := cfg.Window
	s.comps = make([]uct.Completion, w)
	s.iovs = make([][][]byte, w)
	for i := range s.comps {
		s.comps[i].Func = func(c *uct.Completion) {
			s.outstanding--
			s.free = append(s.free, i)
		}
		s.iovs[i] = make([][]byte, 1)
	}
	s.free = make([]int, 0, w)
	for i := w - 1; i >= 0; i-- {
		s.free = append(s.free, i)
	}
	s.flushComp.Func = func(*uct.Completion) { s.flushed = true }
	count := func(n *int) uct.AMHandler { return func(any, []byte, uct.AMFlags) { *n++ } }
	for id, n := range map[uint8]*int{amPing: &s.recv, amData: &s.recv, amDone: &s.done} {
		if err := s.it.SetAMHandler(id, count(n), nil); err != nil {
			return nil, err
		}
	}
	if err := s.it.SetAMHandler(amAck, s.onAck, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// checkSize says whether this iface can run the test at size.
func (s *session) checkSize(size int) error {
	t, a := s.test, s.attr
	if size < t.minSize {
		return fmt.Errorf("%w: %s needs sizes of at least %d bytes (the AM header)", errUsage, t.name, t.minSize)
	}
	limit := 0
	switch t.name {
	case "am_lat", "am_bw":
		limit = max(a.AMMaxShort+8, a.AMMaxBcopy)
		if a.Cap.Has(uct.CapAMZcopy) {
			limit = max(limit, a.AMMaxZcopy)
		}
	case "put_lat", "put_bw":
		limit = max(a.PutMaxShort, a.PutMaxZcopy)
	case "get_bw":
		limit = a.GetMaxZcopy
	default:
		return nil
	}
	if size > limit {
		return fmt.Errorf("%w: %s over %s: size %d exceeds the iface's limit %d", errUsage, t.name, s.cfg.Transport, size, limit)
	}
	return nil
}

func (s *session) setup() setup {
	return setup{Addr: s.it.Address(), RKey: s.mem.PackRKey(), MemAddr: s.mem.Address(), MemLen: uint64(len(s.buf))}
}

// connect unpacks the peer's key and connects to its iface.
func (s *session) connect(peer setup) error {
	if peer.MemLen < uint64(s.dataLen+64) {
		return fmt.Errorf("peer buffer of %d bytes, need %d: %w", peer.MemLen, s.dataLen+64, ErrFormat)
	}
	var err error
	if s.rkey, err = s.md.UnpackRKey(peer.RKey); err != nil {
		return fmt.Errorf("peer rkey: %w", err)
	}
	s.raddr = peer.MemAddr
	if s.ep, err = s.it.Connect(peer.Addr, uct.EPParams{Timeout: epTimeout}); err != nil {
		return fmt.Errorf("connect to peer: %w", err)
	}
	return nil
}

// onError is the iface error handler of -e peer: it ends the run.
func (s *session) onError(_ any, ep uct.Endpoint, err error) {
	err = fmt.Errorf("peer failure reported by the transport: %w", err)
	s.failure.CompareAndSwap(nil, &err)
	s.cancel()
	s.it.Wake()
}

func (s *session) Close() error {
	var err error
	for _, c := range []interface{ Close() error }{s.ep, s.rkey, s.mem, s.it, s.md} {
		if c != nil {
			err = multierr.Append(err, c.Close())
		}
	}
	if s.cancel != nil {
		s.cancel()
	}
	return err
}

// beginWait starts a wait: poll counts its idle spins from here.
func (s *session) beginWait() { s.idle = 0 }

// poll makes progress once; in sleep mode an idle iface is armed and
// waited on. Every 4096 idle spins it checks for a failed peer and a stall.
func (s *session) poll() error {
	if s.it.Progress() != 0 {
		return nil
	}
	s.idle++
	if s.sleep {
		if s.it.Arm() == nil {
			_ = s.it.Wait(s.ctx)
		}
		if s.ctx.Err() != nil {
			return s.check()
		}
	}
	if s.idle&0xfff == 0 {
		return s.check()
	}
	return nil
}

func (s *session) check() error {
	var epErr error
	if s.ep != nil {
		epErr = s.ep.Err()
	}
	return s.spinCheck.check(s.ctx, epErr)
}

// spinCheck is what a session's wait loop checks every 4096 idle spins:
// a failure reported by the transport, the endpoint's error state, the
// run's cancellation and a stall (no progress for stallTimeout).
type spinCheck struct {
	failure atomic.Pointer[error]
	idle    int
	stallAt time.Time
}

func (c *spinCheck) check(ctx context.Context, epErr error) error {
	if p := c.failure.Load(); p != nil {
		return *p
	}
	if epErr != nil {
		return fmt.Errorf("endpoint failed: %w", epErr)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("run canceled: %w", ctx.Err())
	}
	now := time.Now()
	if c.idle == 0x1000 || c.stallAt.IsZero() {
		c.stallAt = now
	} else if now.Sub(c.stallAt) > stallTimeout {
		return fmt.Errorf("no progress for %v: %w", stallTimeout, uct.ErrTimedOut)
	}
	return nil
}

// retry runs an operation's back-pressure loop: ErrNoResource makes
// progress and asks for another try.
func (s *session) retry(err error) (again bool, _ error) {
	if err == nil {
		return false, nil // the common case, without a call into errors.Is
	}
	if err == uct.ErrNoResource || errors.Is(err, uct.ErrNoResource) {
		s.fc.noResource++
		return true, s.poll()
	}
	return false, err
}

// slot takes a free completion, progressing until one is free.
func (s *session) slot() (int, error) {
	s.beginWait()
	for len(s.free) == 0 {
		if err := s.poll(); err != nil {
			return 0, err
		}
	}
	i := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	s.comps[i].Count, s.comps[i].Status = 1, nil
	return i, nil
}

// posted accounts for an operation that used completion i and returned
// err: done (slot freed), in progress (outstanding) or failed.
func (s *session) posted(i int, err error) error {
	switch {
	case err == nil:
		s.free = append(s.free, i)
		return nil
	case err == uct.ErrInProgress || errors.Is(err, uct.ErrInProgress):
		s.outstanding++
		return nil
	default:
		s.free = append(s.free, i)
		return err
	}
}

// drain waits for every outstanding operation, then flushes the endpoint.
func (s *session) drain() error {
	s.beginWait()
	for s.outstanding > 0 {
		if err := s.poll(); err != nil {
			return err
		}
	}
	for _, c := range s.comps {
		if c.Status != nil {
			return fmt.Errorf("operation failed: %w", c.Status)
		}
	}
	s.flushed = false
	s.flushComp.Count, s.flushComp.Status = 1, nil
	err := s.ep.Flush(false, &s.flushComp)
	if err == nil {
		return nil
	}
	if !errors.Is(err, uct.ErrInProgress) {
		return fmt.Errorf("flush: %w", err)
	}
	s.beginWait()
	for !s.flushed {
		if err := s.poll(); err != nil {
			return err
		}
	}
	if s.flushComp.Status != nil {
		return fmt.Errorf("flush: %w", s.flushComp.Status)
	}
	return nil
}

// sendAM sends an AM of size bytes (8-byte header included) from src:
// short if it fits, else bcopy, else zcopy.
func (s *session) sendAM(id uint8, size int) error { return s.sendAMHdr(id, size, uint64(s.seq)) }

// sendAMHdr is sendAM with the AM header hdr (little-endian in src[:8]
// for bcopy and zcopy).
func (s *session) sendAMHdr(id uint8, size int, hdr uint64) error {
	if size-8 > s.attr.AMMaxShort {
		binary.LittleEndian.PutUint64(s.src[:8], hdr)
	}
	for {
		var err error
		switch {
		case size-8 <= s.attr.AMMaxShort:
			err = s.ep.AMShort(id, hdr, s.src[8:size])
		case size <= s.attr.AMMaxBcopy:
			_, err = s.ep.AMBcopy(id, s.src[:8], s.src[8:size])
		default:
			var i int
			if i, err = s.slot(); err != nil {
				return err
			}
			s.iovs[i][0] = s.src[8:size]
			err = s.posted(i, s.ep.AMZcopy(id, s.src[:8], s.iovs[i], &s.comps[i]))
		}
		again, err := s.retry(err)
		if !again {
			return err
		}
	}
}

func (s *session) timer() *meter { return &s.meter }

// run runs iters iterations of the test at size.
func (s *session) run(size, iters int) error { return s.test.run(s, size, iters) }

// zero clears the data part of the buffer before a size runs.
func (s *session) zero() {
	clear(s.buf[:s.dataLen])
	clear(s.src)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
