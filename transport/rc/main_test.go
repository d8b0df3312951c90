package rc

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/reuseport"
	"github.com/ucgo/ucgo/internal/testproc"
	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// AM ids between the test processes.
const (
	amEcho  = 1 // the child sends the message back on amEcho
	amSum   = 2 // 16 bytes offset, length: the child answers amSum with the CRC-32 of that range of its memory
	amRace  = 3 // 8 bytes offset, 8 bytes n: the child adds 1 n times to the 32-bit words at offset and offset+4 with CPU atomics, then answers amRace
	amQuit  = 4
	amCount = 5 // the child counts; a header with the top bit set asks for one amEcho reply
)

// childMem is the size of the child's Alloc memory.
const childMem = 8 << 20

// Child roles: "serve" serves AMs, "pinned" does so on the last CPU,
// "fallback" first drops privileges so that the port cannot be shared.
func TestMain(m *testing.M) {
	for _, role := range []string{"serve", "pinned", "fallback"} {
		testproc.Register(role, func() error { return runChild(role) })
	}
	testproc.Main(m)
}

// runChild opens an iface on the default device of its namespace, prints
// "address rkey memaddr", reads the parent's address, connects back and
// serves AMs until amQuit or until its endpoint to the parent fails.
func runChild(role string) error {
	if role == "pinned" {
		var set unix.CPUSet
		set.Set(runtime.NumCPU() - 1)
		runtime.LockOSThread()
		unix.SchedSetaffinity(0, &set)
	}
	if role == "fallback" {
		// As user nobody eBPF is refused: a first device takes 4791
		// alone, so the iface's device must bind a port of its own.
		if err := errors.Join(syscall.Setgroups(nil), syscall.Setgid(65534), syscall.Setuid(65534)); err != nil {
			return fmt.Errorf("drop privileges: %w", err)
		}
		holder, err := verbs.Open(verbs.Config{Interface: defaultDevice(), ProgressInterval: -1})
		if err != nil {
			return err
		}
		defer holder.Close()
		if p := holder.LocalAddr().Port(); p != 4791 {
			return fmt.Errorf("first unprivileged device on port %d, want 4791 alone", p)
		}
	}
	mdi, err := New(Config{}).OpenMD(uct.MDParams{})
	if err != nil {
		return err
	}
	md := mdi.(*MD)
	if role == "fallback" {
		shared, why := md.dev.SharedPort()
		if shared || !errors.Is(why, reuseport.ErrUnavailable) || md.dev.LocalAddr().Port() == 4791 {
			return fmt.Errorf("unprivileged device on %v: shared %t (%v), want a port of its own because eBPF is refused", md.dev.LocalAddr(), shared, why)
		}
	}
	iti, err := md.OpenIface(uct.IfaceParams{})
	if err != nil {
		return err
	}
	it := iti.(*Iface)
	mem, err := md.Alloc(childMem, uct.AccessAll)
	if err != nil {
		return err
	}
	if err := waitPortActive(md, 10*time.Second); err != nil {
		return err
	}
	fmt.Printf("%x %x %d\n", it.Address(), mem.PackRKey(), mem.Address())
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return err
	}
	peer, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return err
	}
	epi, err := it.Connect(peer, uct.EPParams{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	ep := epi.(*Endpoint)
	it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	var (
		replies [][]byte // id byte + data
		spare   [][]byte // buffers of sent replies, for reuse
		quit    bool
		raceErr = make(chan []byte, 4)
	)
	reply := func(id uint8, data []byte) {
		var b []byte
		if k := len(spare); k > 0 {
			b, spare = spare[k-1][:0], spare[:k-1]
		}
		replies = append(replies, append(append(b, id), data...))
	}
	buf := mem.Bytes()
	it.SetAMHandler(amEcho, func(_ any, d []byte, _ uct.AMFlags) { reply(amEcho, d) }, nil)
	it.SetAMHandler(amSum, func(_ any, d []byte, _ uct.AMFlags) {
		off, n := binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:])
		reply(amSum, binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(buf[off:off+n])))
	}, nil)
	it.SetAMHandler(amRace, func(_ any, d []byte, _ uct.AMFlags) {
		off, n := int(binary.LittleEndian.Uint64(d)), int(binary.LittleEndian.Uint64(d[8:]))
		go func() {
			for i := 0; i < n; i++ {
				atomicAdd32(buf, off, 1)
				atomicAdd32(buf, off+4, 1)
				if i%16 == 0 {
					runtime.Gosched()
				}
			}
			raceErr <- d
		}()
	}, nil)
	count := 0
	it.SetAMHandler(amCount, func(_ any, d []byte, _ uct.AMFlags) {
		count++
		if d[7]&0x80 != 0 {
			reply(amEcho, d[:8])
		}
	}, nil)
	it.SetAMHandler(amQuit, func(any, []byte, uct.AMFlags) { quit = true }, nil)
	for !quit {
		it.Progress()
		select {
		case d := <-raceErr:
			reply(amRace, d)
		default:
		}
		for len(replies) > 0 {
			r := replies[0]
			_, err := ep.AMBcopy(r[0], r[1:], nil)
			// Back-pressure, and a transient fault such as this side's
			// link still seen down after it came back up (its watcher
			// may learn it after the parent's), are retried on the next
			// pass.
			if errors.Is(err, uct.ErrNoResource) || uct.RemedyOf(err) == uct.RemedyRetry {
				break
			}
			if err != nil {
				return fmt.Errorf("reply: %w", err)
			}
			spare = append(spare, r)
			replies = replies[:copy(replies, replies[1:])]
		}
		if ep.Err() != nil {
			return fmt.Errorf("endpoint to the parent: %w", ep.Err())
		}
	}
	// Let the last replies reach the parent before closing.
	fl := &uct.Completion{Count: 1}
	if ep.Flush(false, fl) == uct.ErrInProgress {
		for deadline := time.Now().Add(5 * time.Second); fl.Count > 0 && time.Now().Before(deadline); {
			it.Progress()
		}
	}
	ep.Close()
	it.Close()
	mem.Close()
	return md.Close()
}

// peer is the parent's side of a child process in namespace B: an MD and
// iface in namespace A, an endpoint to the child and what the child sent.
type peer struct {
	t       testing.TB
	pair    *netns.Pair
	child   *testproc.Child
	cmd     *exec.Cmd
	stdin   *os.File
	md      *MD
	it      *Iface
	ep      *Endpoint
	addr    []byte
	rkey    uct.RKey
	memAddr uint64
	echo    [][]byte
	sums    []uint32
	races   int
}

// startPeer builds a namespace pair, opens the parent's iface in A and
// starts a child in B connected both ways. timeout is the endpoint's
// EPParams.Timeout.
func startPeer(t testing.TB, timeout time.Duration) *peer {
	t.Helper()
	return startPeerRole(t, timeout, "serve")
}

// startPeerRole is startPeer with the child's role ("pinned": on the last
// CPU).
func startPeerRole(t testing.TB, timeout time.Duration, role string) *peer {
	t.Helper()
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, pair: pair}
	err = pair.A.Do(func() error {
		mdi, err := New(Config{}).OpenMD(uct.MDParams{})
		if err != nil {
			return err
		}
		p.md = mdi.(*MD)
		it, err := p.md.OpenIface(uct.IfaceParams{})
		if err != nil {
			p.md.Close()
			return err
		}
		p.it = it.(*Iface)
		return nil
	})
	if err != nil {
		t.Fatalf("open iface in %s: %v", pair.A.Name(), err)
	}
	t.Cleanup(func() {
		if p.ep != nil {
			p.ep.Close()
		}
		p.it.Close()
		p.md.Close()
	})
	p.it.SetAMHandler(amEcho, func(_ any, d []byte, _ uct.AMFlags) { p.echo = append(p.echo, append([]byte(nil), d...)) }, nil)
	p.it.SetAMHandler(amSum, func(_ any, d []byte, _ uct.AMFlags) { p.sums = append(p.sums, binary.LittleEndian.Uint32(d)) }, nil)
	p.it.SetAMHandler(amRace, func(any, []byte, uct.AMFlags) { p.races++ }, nil)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := testproc.Start(t, testproc.Spec{Role: role, Cmd: pair.B.Command(self, testproc.Args...)})
	p.child, p.cmd, p.stdin = child, child.Cmd, child.Stdin
	var a, k string
	if err := child.Scan(60*time.Second, &a, &k, &p.memAddr); err != nil {
		t.Fatalf("reading the child's address: %v", err)
	}
	p.addr, _ = hex.DecodeString(a)
	packed, _ := hex.DecodeString(k)
	if p.rkey, err = p.md.UnpackRKey(packed); err != nil {
		t.Fatal(err)
	}
	if err := waitPortActive(p.md, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(p.stdin, "%x\n", p.it.Address())
	err = pair.A.Do(func() error {
		ep, err := p.it.Connect(p.addr, uct.EPParams{Timeout: timeout})
		if err == nil {
			p.ep = ep.(*Endpoint)
		}
		return err
	})
	if err != nil {
		t.Fatalf("connect to the child: %v", err)
	}
	return p
}

// until progresses the parent until cond holds or 30 s pass.
func (p *peer) until(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not done after 30 s", what)
		}
		if p.it.Progress() == 0 {
			runtime.Gosched()
		}
	}
}

// do posts an operation, retrying on ErrNoResource, and waits for its
// completion; it returns the operation's final error.
func (p *peer) do(what string, post func(c *uct.Completion) error) error {
	p.t.Helper()
	for {
		done := false
		c := &uct.Completion{Count: 1, Func: func(*uct.Completion) { done = true }}
		err := post(c)
		switch {
		case errors.Is(err, uct.ErrNoResource):
			p.it.Progress()
			continue
		case err == uct.ErrInProgress:
			p.until(what, func() bool { return done })
			return c.Status
		default:
			return err
		}
	}
}

func (p *peer) must(what string, post func(c *uct.Completion) error) {
	p.t.Helper()
	if err := p.do(what, post); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func (p *peer) flush() {
	p.t.Helper()
	p.must("flush", func(c *uct.Completion) error { return p.ep.Flush(false, c) })
}

// sum asks the child for the CRC-32 of n bytes of its memory at off.
func (p *peer) sum(off, n int) uint32 {
	p.t.Helper()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(off))
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	k := len(p.sums)
	p.must("sum request", func(*uct.Completion) error { _, err := p.ep.AMBcopy(amSum, b[:], nil); return err })
	p.until("sum reply", func() bool { return len(p.sums) > k })
	return p.sums[k]
}

// quit tells the child to exit and waits for it.
func (p *peer) quit() {
	p.t.Helper()
	// The child closes its iface after amQuit, which fails this endpoint.
	p.it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	p.must("quit", func(*uct.Completion) error { return p.ep.AMShort(amQuit, 0, nil) })
	if err := p.child.Wait(30 * time.Second); errors.Is(err, testproc.ErrTimeout) {
		p.t.Errorf("child did not exit after amQuit")
	} else if err != nil {
		p.t.Errorf("child: %v", err)
	}
}

// waitPortActive waits until the device's port is active (a veth's
// carrier may come up just after the namespaces are made).
func waitPortActive(md *MD, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for md.dev.QueryPort().State != verbs.PortActive {
		if time.Now().After(deadline) {
			return fmt.Errorf("port of %s not active after %v", md.dev.Name(), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
