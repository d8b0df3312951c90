package rc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed + byte(i>>9)
	}
	return b
}

var transferSizes = []int{0, 1, 7, 8, 63, 64, 1000, 4095, 4096, 65536, 1 << 20, 4 << 20}

// echoCheck sends msg with send and waits for the child's echo.
func (p *peer) echoCheck(what string, want []byte, send func() error) {
	p.t.Helper()
	k := len(p.echo)
	p.must(what, func(*uct.Completion) error { return send() })
	p.until(what+" echo", func() bool { return len(p.echo) > k })
	if !bytes.Equal(p.echo[k], want) {
		p.t.Errorf("%s: echo of %d bytes differs (got %d bytes)", what, len(want), len(p.echo[k]))
	}
}

// putGetCheck writes each size with put, checks the child's CRC of the
// target range and reads it back with get.
func (p *peer) putGetCheck(name string, sizes []int, put func(src []byte, raddr uint64, c *uct.Completion) error) {
	p.t.Helper()
	const off = 64
	for i, n := range sizes {
		src := pattern(n, byte(i+1))
		raddr := p.memAddr + off
		p.must(fmt.Sprintf("%s %d bytes", name, n), func(c *uct.Completion) error { return put(src, raddr, c) })
		p.flush()
		if got, want := p.sum(off, n), crc32.ChecksumIEEE(src); got != want {
			p.t.Errorf("%s %d bytes: child memory CRC %08x, want %08x", name, n, got, want)
		}
		dst := make([]byte, n+2)
		p.must(fmt.Sprintf("get %d bytes", n), func(c *uct.Completion) error {
			return p.ep.GetZcopy([][]byte{dst[1 : 1+n/2], dst[1+n/2 : 1+n]}, raddr, p.rkey, c)
		})
		if !bytes.Equal(dst[1:1+n], src) || dst[0] != 0 || dst[n+1] != 0 {
			p.t.Errorf("%s %d bytes: read back differs", name, n)
		}
	}
}

// TestNetnsTransfer moves AMs, puts, gets and atomics between processes in
// two network namespaces and checks every byte.
func TestNetnsTransfer(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	attr := p.it.Attr()
	for _, n := range []int{0, 1, 8, attr.AMMaxShort} {
		pl := pattern(n, 3)
		want := binary.LittleEndian.AppendUint64(nil, 0xfeedface12345678)
		want = append(want, pl...)
		p.echoCheck(fmt.Sprintf("AMShort %d", n), want, func() error { return p.ep.AMShort(amEcho, 0xfeedface12345678, pl) })
	}
	for _, n := range []int{0, 1, 100, 1024, 1025, 4096, attr.AMMaxBcopy} {
		m := pattern(n, 5)
		p.echoCheck(fmt.Sprintf("AMBcopy %d", n), m, func() error { _, err := p.ep.AMBcopy(amEcho, m, nil); return err })
	}
	for _, n := range []int{0, 1, 3000, attr.AMMaxZcopy - 16} {
		hdr, m := pattern(16, 9), pattern(n, 11)
		want := append(append([]byte{}, hdr...), m...)
		k := len(p.echo)
		p.must(fmt.Sprintf("AMZcopy %d", n), func(c *uct.Completion) error {
			return p.ep.AMZcopy(amEcho, hdr, [][]byte{m[:n/3], m[n/3:]}, c)
		})
		p.until("AMZcopy echo", func() bool { return len(p.echo) > k })
		if !bytes.Equal(p.echo[k], want) {
			t.Errorf("AMZcopy %d: echo differs", n)
		}
	}
	p.putGetCheck("PutZcopy", transferSizes, func(src []byte, raddr uint64, c *uct.Completion) error {
		return p.ep.PutZcopy([][]byte{src[:len(src)/2], src[len(src)/2:]}, raddr, p.rkey, c)
	})
	p.putGetCheck("PutBcopy", []int{0, 1, 1024, 1025, attr.PutMaxBcopy}, func(src []byte, raddr uint64, c *uct.Completion) error {
		_, err := p.ep.PutBcopy(src, raddr, p.rkey)
		return err
	})
	p.putGetCheck("PutShort", []int{0, 8, attr.PutMaxShort}, func(src []byte, raddr uint64, c *uct.Completion) error {
		return p.ep.PutShort(src, raddr, p.rkey)
	})

	// 64-bit fetch-add and compare-swap, then 32-bit emulated adds racing
	// with the child's CPU atomics on both halves of the same word.
	word := p.memAddr + 4096
	p.must("clear word", func(*uct.Completion) error { return p.ep.PutShort(make([]byte, 8), word, p.rkey) })
	var old uint64
	p.must("fetch-add", func(c *uct.Completion) error {
		return p.ep.AtomicFetch(uct.AtomicAdd, 8, 5, 0, &old, word, p.rkey, c)
	})
	if old != 0 {
		t.Fatalf("fetch-add returned %d, want 0", old)
	}
	p.must("cswap", func(c *uct.Completion) error {
		return p.ep.AtomicFetch(uct.AtomicCSwap, 8, 0, 5, &old, word, p.rkey, c)
	})
	if old != 5 {
		t.Fatalf("cswap returned %d, want 5", old)
	}
	const n = 2000
	var req [16]byte
	binary.LittleEndian.PutUint64(req[:], 4096)
	binary.LittleEndian.PutUint64(req[8:], n)
	p.must("race request", func(*uct.Completion) error { _, err := p.ep.AMBcopy(amRace, req[:], nil); return err })
	lo := word // the first 32-bit word
	for i := 0; i < n; i++ {
		p.must("atomic add32", func(*uct.Completion) error { return p.ep.AtomicPost(uct.AtomicAdd, 4, 1, lo, p.rkey) })
	}
	p.until("child's atomics", func() bool { return p.races == 1 })
	p.flush()
	var got [8]byte
	p.must("get word", func(c *uct.Completion) error { return p.ep.GetBcopy(got[:], word, p.rkey, c) })
	l, h := binary.NativeEndian.Uint32(got[:]), binary.NativeEndian.Uint32(got[4:])
	if l != 2*n || h != n {
		t.Errorf("after %d emulated 32-bit adds racing with %d CPU adds on each half: words %d, %d; want %d, %d", n, n, l, h, 2*n, n)
	}
	p.quit()
}

// TestNetnsFallbackPort: a child running as user nobody, where eBPF is
// refused and port 4791 is already held by another device of its own,
// opens its iface on a port the kernel picked. Its address carries that
// port, and the parent (on a shared 4791) reaches it for AMs in both
// directions, puts and gets.
func TestNetnsFallbackPort(t *testing.T) {
	p := startPeerRole(t, 5*time.Second, "fallback")
	a, err := DecodeAddress(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if a.UDPPort == 4791 || a.UDPPort == 0 {
		t.Fatalf("child's address %v: want a UDP port of its own", a)
	}
	if shared, why := p.md.dev.SharedPort(); !shared {
		t.Fatalf("parent's device does not share 4791: %v", why)
	}
	for _, n := range []int{8, 1000, p.it.Attr().AMMaxBcopy} {
		m := pattern(n, 21)
		p.echoCheck(fmt.Sprintf("AMBcopy %d", n), m, func() error { _, err := p.ep.AMBcopy(amEcho, m, nil); return err })
	}
	p.putGetCheck("PutZcopy", []int{1, 4096, 65536, 1 << 20}, func(src []byte, raddr uint64, c *uct.Completion) error {
		return p.ep.PutZcopy([][]byte{src}, raddr, p.rkey, c)
	})
	p.quit()
}

// drops are the eBPF faults of dropBoth.
type drops []*fault.Fault

// dropBoth attaches an eBPF fault that loses fraction of the RoCE packets
// leaving either end of p's veth pair.
func dropBoth(t *testing.T, p *peer, fraction float64) drops {
	t.Helper()
	var fs drops
	for _, ns := range []struct {
		do   func(func() error) error
		link string
	}{{p.pair.A.Do, p.pair.A.Link()}, {p.pair.B.Do, p.pair.B.Link()}} {
		err := ns.do(func() error {
			f, err := fault.Drop(ns.link, fault.Config{Fraction: fraction, OnlyUDPPort: fault.RoCEv2Port})
			if err == nil {
				fs = append(fs, f)
			}
			return err
		})
		if err != nil {
			fs.Close()
			t.Fatalf("attach drop fault: %v", err)
		}
	}
	return fs
}

// Counters sums the faults' packets seen and dropped.
func (fs drops) Counters() (seen, dropped uint64) {
	for _, f := range fs {
		s, d := f.Counters()
		seen, dropped = seen+s, dropped+d
	}
	return seen, dropped
}

// Close detaches the faults.
func (fs drops) Close() {
	for _, f := range fs {
		f.Close()
	}
}

// TestNetnsDrop loses 5 % of the RoCE packets in both directions: every AM
// arrives once, intact and in order, and RMA moves the right bytes.
func TestNetnsDrop(t *testing.T) {
	p := startPeer(t, 10*time.Second)
	faults := dropBoth(t, p, 0.05)
	defer faults.Close()
	const msgs = 500
	for i := 0; i < msgs; i++ {
		m := pattern(2+i%3000, byte(i))
		binary.LittleEndian.PutUint16(m, uint16(i))
		p.must("AMBcopy", func(*uct.Completion) error { _, err := p.ep.AMBcopy(amEcho, m, nil); return err })
		p.it.Progress()
	}
	p.until("all echoes", func() bool { return len(p.echo) >= msgs })
	for i, e := range p.echo {
		m := pattern(2+i%3000, byte(i))
		binary.LittleEndian.PutUint16(m, uint16(i))
		if !bytes.Equal(e, m) {
			t.Fatalf("echo %d: %d bytes, seq %d; want message %d intact (in order)", i, len(e), binary.LittleEndian.Uint16(e), i)
		}
	}
	if len(p.echo) != msgs {
		t.Errorf("%d echoes, want %d", len(p.echo), msgs)
	}
	p.putGetCheck("PutZcopy", []int{4096, 1 << 20, 4 << 20}, func(src []byte, raddr uint64, c *uct.Completion) error {
		return p.ep.PutZcopy([][]byte{src}, raddr, p.rkey, c)
	})
	seen, dropped := faults.Counters()
	t.Logf("%d of %d RoCE packets dropped; device counters %+v", dropped, seen, p.md.dev.Counters())
	if dropped == 0 {
		t.Errorf("the fault dropped nothing of %d packets", seen)
	}
	p.quit()
}

// errRecorder collects what the error handler and the event queue report.
type errRecorder struct {
	mu   sync.Mutex
	eps  []uct.Endpoint
	errs []error
}

func (r *errRecorder) handler(_ any, ep uct.Endpoint, err error) {
	r.mu.Lock()
	r.eps, r.errs = append(r.eps, ep), append(r.errs, err)
	r.mu.Unlock()
}

func (r *errRecorder) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// events takes every queued event of it and acks it.
func events(it *Iface) []*uct.Event {
	var out []*uct.Event
	for {
		ev, ok := it.Events().TryGet()
		if !ok {
			return out
		}
		ev.Ack()
		out = append(out, ev)
	}
}

func hasEvent(evs []*uct.Event, typ uct.EventType) *uct.Event {
	for _, e := range evs {
		if e.Type == typ {
			return e
		}
	}
	return nil
}

// TestNetnsBlackHole: every packet to the child's QP vanishes. The first
// operation fails with ErrEndpointTimeout, the rest are flushed, the
// endpoint is in error state and says so.
func TestNetnsBlackHole(t *testing.T) {
	p := startPeer(t, time.Second)
	var rec errRecorder
	p.it.SetErrorHandler(rec.handler, nil)
	p.putGetCheck("PutZcopy", []int{4096}, func(src []byte, raddr uint64, c *uct.Completion) error {
		return p.ep.PutZcopy([][]byte{src}, raddr, p.rkey, c)
	})
	qpn := p.ep.peerQPN
	var f *fault.Fault
	err := p.pair.B.Do(func() (err error) {
		f, err = fault.Drop(p.pair.B.Link(), fault.Config{OnlyUDPPort: fault.RoCEv2Port, OnlyDestQPN: &qpn, BlackHole: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := pattern(8192, 1)
	type res struct {
		done bool
		err  error
	}
	results := make([]*res, 8)
	for i := range results {
		r := &res{}
		results[i] = r
		c := &uct.Completion{Count: 1, Func: func(c *uct.Completion) { r.done, r.err = true, c.Status }}
		if err := p.ep.PutZcopy([][]byte{src}, p.memAddr+uint64(i)*8192, p.rkey, c); err != uct.ErrInProgress {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	start := time.Now()
	p.until("all puts complete", func() bool {
		for _, r := range results {
			if !r.done {
				return false
			}
		}
		return true
	})
	t.Logf("retry exceeded after %v", time.Since(start))
	if !errors.Is(results[0].err, uct.ErrEndpointTimeout) {
		t.Errorf("first put: %v, want ErrEndpointTimeout", results[0].err)
	}
	for i, r := range results[1:] {
		if !errors.Is(r.err, uct.ErrFlushed) && !errors.Is(r.err, uct.ErrEndpointTimeout) {
			t.Errorf("put %d: %v, want ErrFlushed", i+1, r.err)
		}
	}
	if !errors.Is(p.ep.Err(), uct.ErrEndpointTimeout) {
		t.Errorf("endpoint Err %v, want ErrEndpointTimeout", p.ep.Err())
	}
	if err := p.ep.PutShort([]byte{1}, p.memAddr, p.rkey); !errors.Is(err, uct.ErrEndpointTimeout) {
		t.Errorf("put on the failed endpoint: %v, want a fast ErrEndpointTimeout", err)
	}
	if rec.n() != 1 || rec.eps[0] != p.ep || !errors.Is(rec.errs[0], uct.ErrEndpointTimeout) {
		t.Errorf("error handler got %v for %v, want one ErrEndpointTimeout for the endpoint", rec.errs, rec.eps)
	}
	if e := hasEvent(events(p.it), uct.EventEndpointError); e == nil || e.Endpoint != p.ep {
		t.Errorf("no EventEndpointError for the endpoint")
	}
	if _, dropped := f.Counters(); dropped == 0 {
		t.Errorf("the black hole dropped nothing")
	}
}

// TestNetnsBadRKey: a put with a key the child never issued fails with
// ErrRemoteProtection and leaves the endpoint in that error state.
func TestNetnsBadRKey(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	p.it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	good := p.rkey.(*rkey)
	bad := &rkey{key: good.key ^ 0x5a5a00, md: good.md}
	err := p.do("put with a bad rkey", func(c *uct.Completion) error {
		return p.ep.PutZcopy([][]byte{pattern(64, 1)}, p.memAddr, bad, c)
	})
	if !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("put with a bad rkey: %v, want ErrRemoteProtection", err)
	}
	var oe *uct.OpError
	if !errors.As(err, &oe) || oe.Op != "put_zcopy" {
		t.Errorf("error %v is not an *uct.OpError of put_zcopy", err)
	}
	if !errors.Is(p.ep.Err(), uct.ErrRemoteProtection) {
		t.Errorf("endpoint Err %v, want ErrRemoteProtection", p.ep.Err())
	}
	events(p.it)
}

// TestNetnsLinkDown: the parent's link goes down: watchers hear it, a
// port-error event is posted and new operations fail with ErrRouteLost,
// a transient status (remedy retry) that leaves the endpoint healthy;
// after link up the same endpoint works again.
func TestNetnsLinkDown(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	p.it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	var (
		mu       sync.Mutex
		statuses []uct.DeviceStatus
	)
	w, err := p.it.WatchDevice(func(e uct.DeviceStatusEvent) {
		mu.Lock()
		statuses = append(statuses, e.Status)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	last := func() uct.DeviceStatus {
		mu.Lock()
		defer mu.Unlock()
		if len(statuses) == 0 {
			return 0
		}
		return statuses[len(statuses)-1]
	}
	// The child's endpoint back connects on its own time: an echo shows
	// it connected before the link goes down, which it would not survive.
	p.echoCheck("AMBcopy before link down", []byte{3}, func() error { _, err := p.ep.AMBcopy(amEcho, []byte{3}, nil); return err })
	if err := p.pair.A.SetLink(false); err != nil {
		t.Fatal(err)
	}
	var evs []*uct.Event
	p.until("port error event", func() bool {
		evs = append(evs, events(p.it)...)
		return hasEvent(evs, uct.EventPortError) != nil
	})
	p.until("watcher told of link down", func() bool { return last() == uct.DeviceDown })
	err = p.ep.PutShort([]byte{1}, p.memAddr, p.rkey)
	if !errors.Is(err, uct.ErrRouteLost) || uct.RemedyOf(err) != uct.RemedyRetry || uct.StatusOf(err).IsEndpointFatal() {
		t.Errorf("put with the link down: %v (remedy %v), want ErrRouteLost with remedy retry", err, uct.RemedyOf(err))
	}
	if _, err := p.ep.AMBcopy(amEcho, []byte{1}, nil); !errors.Is(err, uct.ErrRouteLost) {
		t.Errorf("AM with the link down: %v, want ErrRouteLost", err)
	}
	if err := p.ep.Err(); err != nil {
		t.Errorf("endpoint in error state %v while its link is down, want healthy", err)
	}
	if err := p.pair.A.SetLink(true); err != nil {
		t.Fatal(err)
	}
	p.until("port active event", func() bool {
		evs = append(evs, events(p.it)...)
		return hasEvent(evs, uct.EventPortActive) != nil
	})
	p.until("watcher told of link up", func() bool { return last() == uct.DeviceUp })
	p.echoCheck("AMBcopy after link up", []byte{7, 7}, func() error { _, err := p.ep.AMBcopy(amEcho, []byte{7, 7}, nil); return err })
	p.quit()
}

// TestNetnsPeerKilled: SIGKILL of the child puts the endpoint in error
// state with uct.ErrPeerFailed (its connection manager link ended without
// DREQ) and fails new operations.
func TestNetnsPeerKilled(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	var rec errRecorder
	p.it.SetErrorHandler(rec.handler, nil)
	p.echoCheck("AMBcopy before the kill", []byte{1}, func() error { _, err := p.ep.AMBcopy(amEcho, []byte{1}, nil); return err })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.until("endpoint error", func() bool {
		p.ep.PutShort([]byte{1}, p.memAddr, p.rkey)
		return p.ep.Err() != nil
	})
	if !errors.Is(p.ep.Err(), uct.ErrPeerFailed) || !uct.StatusOf(p.ep.Err()).IsEndpointFatal() {
		t.Errorf("endpoint Err %v, want an endpoint-fatal uct.ErrPeerFailed", p.ep.Err())
	}
	_, err := p.ep.AMBcopy(amEcho, []byte{1}, nil)
	if !errors.Is(err, uct.ErrPeerFailed) {
		t.Errorf("AM to the killed peer: %v, want uct.ErrPeerFailed", err)
	}
	if rec.n() == 0 {
		t.Errorf("error handler not called")
	}
	if hasEvent(events(p.it), uct.EventEndpointError) == nil {
		t.Errorf("no EventEndpointError")
	}
}

// TestNetnsPeerClosed: a peer whose iface closes (and whose process then
// exits) sends DREQ on its connection manager link: the endpoint fails
// with uct.ErrConnectionReset, not uct.ErrPeerFailed.
func TestNetnsPeerClosed(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	p.echoCheck("AMBcopy before the close", []byte{1}, func() error { _, err := p.ep.AMBcopy(amEcho, []byte{1}, nil); return err })
	p.quit()
	p.until("endpoint error", func() bool { return p.ep.Err() != nil })
	if err := p.ep.Err(); !errors.Is(err, uct.ErrConnectionReset) || errors.Is(err, uct.ErrPeerFailed) {
		t.Errorf("endpoint Err %v, want uct.ErrConnectionReset", err)
	}
}

// TestNetnsLifelineFlushed: the lifeline watcher stores its error, then
// moves the QP to ERR, then wakes Progress. A Progress that polls the
// flushed completions in between must fail the endpoint and its
// operations with the watcher's error (here the peer's death), not with a
// bare flush. The child is stopped so that the READ stays outstanding; the
// test takes the watcher's first two steps itself.
func TestNetnsLifelineFlushed(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	p.it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.cmd.Process.Signal(syscall.SIGCONT)
	done := false
	c := &uct.Completion{Count: 1, Func: func(*uct.Completion) { done = true }}
	if err := p.ep.GetZcopy([][]byte{make([]byte, 1<<20)}, p.memAddr, p.rkey, c); err != uct.ErrInProgress {
		t.Fatalf("GetZcopy: %v, want in progress", err)
	}
	e := p.ep.opErr("connection", uct.ErrPeerFailed, errors.New("test: link ended without DREQ"))
	p.ep.asyncErr.Store(&e)
	if err := p.ep.qp.Modify(&verbs.QPAttr{State: verbs.QPSErr}, verbs.QPAttrState); err != nil {
		t.Fatal(err)
	}
	p.until("the flushed READ", func() bool { return done })
	if !errors.Is(c.Status, uct.ErrPeerFailed) {
		t.Errorf("READ: %v, want uct.ErrPeerFailed", c.Status)
	}
	if err := p.ep.Err(); !errors.Is(err, uct.ErrPeerFailed) {
		t.Errorf("endpoint Err %v, want uct.ErrPeerFailed", err)
	}
}

// TestNetnsDropRead reads several MiB at once while a fraction of the
// RoCE packets are dropped both ways: every byte arrives, and a missing
// READ response re-requests the READs at most once per gap, not once per
// later response of the same burst.
func TestNetnsDropRead(t *testing.T) {
	p := startPeer(t, 10*time.Second)
	const n, reads, rounds = 1 << 20, 4, 3
	src := pattern(reads*n, 7)
	p.must("PutZcopy", func(c *uct.Completion) error { return p.ep.PutZcopy([][]byte{src}, p.memAddr, p.rkey, c) })
	p.flush()
	faults := dropBoth(t, p, 0.05)
	defer faults.Close()
	before := p.md.dev.Counters()
	for round := 0; round < rounds; round++ {
		dst := make([]byte, reads*n)
		done := 0
		for i := 0; i < reads; i++ {
			c := &uct.Completion{Count: 1, Func: func(c *uct.Completion) {
				if c.Status != nil {
					t.Errorf("get: %v", c.Status)
				}
				done++
			}}
			for {
				err := p.ep.GetZcopy([][]byte{dst[i*n : (i+1)*n]}, p.memAddr+uint64(i*n), p.rkey, c)
				if errors.Is(err, uct.ErrNoResource) {
					p.it.Progress()
					continue
				}
				if err != uct.ErrInProgress {
					t.Fatalf("get %d: %v", i, err)
				}
				break
			}
		}
		p.until("gets", func() bool { return done == reads })
		if !bytes.Equal(dst, src) {
			t.Fatalf("round %d: read back differs", round)
		}
	}
	seen, dropped := faults.Counters()
	c := p.md.dev.Counters()
	retries := c.ReadRetries - before.ReadRetries
	t.Logf("%d of %d RoCE packets dropped; %d READ re-requests; device counters %+v", dropped, seen, retries, c)
	if dropped == 0 {
		t.Errorf("the fault dropped nothing of %d packets", seen)
	}
	// Each re-request needs a response lost since the last one.
	if retries > dropped {
		t.Errorf("%d READ re-requests for %d dropped packets", retries, dropped)
	}
	p.quit()
}
