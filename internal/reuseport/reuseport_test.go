package reuseport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/netns"
)

const (
	childEnv  = "UCGO_REUSEPORT_CHILD"
	unprivEnv = "UCGO_REUSEPORT_UNPRIV"
)

// bigBuffer lets a socket hold bursts of test datagrams.
func bigBuffer(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	})
	return errors.Join(err, serr)
}

func TestMain(m *testing.M) {
	if addr := os.Getenv(unprivEnv); addr != "" {
		_, err := Listen(netip.MustParseAddrPort(addr))
		switch {
		case errors.Is(err, ErrUnavailable):
			fmt.Println("unavailable")
		default:
			fmt.Println("unexpected:", err)
		}
		os.Exit(0)
	}
	if addr := os.Getenv(childEnv); addr != "" {
		if err := child(netip.MustParseAddrPort(addr)); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child joins the group, prints "slot N", then "qpn XXXXXX" for every
// datagram (or "short N"), until stdin closes; then it closes the member
// and prints "closed".
func child(addr netip.AddrPort) error {
	m, err := Listen(addr)
	if err != nil {
		return err
	}
	out := make(chan string, 1024)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, err := m.Conn().Read(buf)
			if err != nil {
				close(out)
				return
			}
			if n < 8 {
				out <- fmt.Sprintf("short %d", n)
				continue
			}
			out <- fmt.Sprintf("qpn %06x", binary.BigEndian.Uint32(buf[4:8])&0xffffff)
		}
	}()
	if err := bigBuffer(m.Conn()); err != nil {
		return err
	}
	fmt.Printf("slot %d\n", m.Slot())
	stdinDone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stdinDone)
	}()
	for {
		select {
		case l := <-out:
			fmt.Println(l)
		case <-stdinDone:
			err := m.Close()
			for l := range out {
				fmt.Println(l)
			}
			if err != nil {
				return err
			}
			fmt.Println("closed")
			return nil
		}
	}
}

// bth is a UDP payload starting with a 12-byte BTH for qpn.
func bth(qpn uint32) []byte {
	b := make([]byte, 16)
	b[0] = 0x04
	binary.BigEndian.PutUint32(b[4:], qpn&0xffffff)
	return b
}

// Low 16 QPN bits: bit 15 marks a probe that may land on any member.
const anyMember = 0x8000

type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	slot  uint8
	own   int // own datagrams seen
	any   int // anyMember probes seen
}

func start(t *testing.T, ns *netns.NS, addr netip.AddrPort) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	if ns != nil {
		cmd = ns.Command(self, "-test.run=^$")
	} else {
		cmd = exec.Command(self, "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), childEnv+"="+addr.String())
	cmd.Stderr = os.Stderr
	p := &proc{cmd: cmd, lines: make(chan string, 4096)}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

// next returns the child's next output line.
func (p *proc) next(t *testing.T) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		return l, ok
	case <-time.After(30 * time.Second):
		t.Fatalf("child %d: no output for 30 s", p.cmd.Process.Pid)
		return "", false
	}
}

func (p *proc) waitSlot(t *testing.T) {
	t.Helper()
	l, _ := p.next(t)
	n, err := fmt.Sscanf(l, "slot %d", &p.slot)
	if n != 1 || err != nil || p.slot == 0 {
		t.Fatalf("child said %q, want a slot", l)
	}
}

// account checks one line: a datagram of its own slot or an anyMember
// probe; anything else is a steering error.
func (p *proc) account(t *testing.T, l string) {
	t.Helper()
	if strings.HasPrefix(l, "short ") {
		p.any++
		return
	}
	var q uint32
	if _, err := fmt.Sscanf(l, "qpn %x", &q); err != nil {
		t.Fatalf("slot %d child: unexpected line %q", p.slot, l)
	}
	switch {
	case q&anyMember != 0:
		p.any++
	case SlotOf(q) == p.slot:
		p.own++
	default:
		t.Fatalf("slot %d member received QPN %#06x of slot %d", p.slot, q, SlotOf(q))
	}
}

// waitOwn reads lines until the child has seen n datagrams of its own.
func (p *proc) waitOwn(t *testing.T, n int) {
	t.Helper()
	for p.own < n {
		l, ok := p.next(t)
		if !ok {
			t.Fatalf("slot %d child exited after %d of %d datagrams", p.slot, p.own, n)
		}
		p.account(t, l)
	}
	if p.own != n {
		t.Fatalf("slot %d child received %d own datagrams, want %d", p.slot, p.own, n)
	}
}

// waitAny reads lines from all procs until they have counted n
// anyMember probes (and short datagrams) in total.
func waitAny(t *testing.T, procs []*proc, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	total := func() int {
		s := 0
		for _, p := range procs {
			s += p.any
		}
		return s
	}
	for total() < n {
		progressed := false
		for _, p := range procs {
			select {
			case l, ok := <-p.lines:
				if ok {
					p.account(t, l)
					progressed = true
				}
			default:
			}
		}
		if !progressed {
			select {
			case <-deadline:
				t.Fatalf("%d of %d probes for unclaimed slots arrived", total(), n)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// finish closes the child's stdin and checks its remaining output.
func (p *proc) finish(t *testing.T, wantOwn int) {
	t.Helper()
	p.stdin.Close()
	closed := false
	for {
		l, ok := p.next(t)
		if !ok {
			break
		}
		if l == "closed" {
			closed = true
			continue
		}
		p.account(t, l)
	}
	if err := p.cmd.Wait(); err != nil || !closed {
		t.Fatalf("slot %d child: exit %v, closed %v", p.slot, err, closed)
	}
	if p.own != wantOwn {
		t.Fatalf("slot %d child received %d own datagrams, want %d", p.slot, p.own, wantOwn)
	}
}

func sendTo(t *testing.T, c *net.UDPConn, qpns ...uint32) {
	t.Helper()
	for _, q := range qpns {
		if _, err := c.Write(bth(q)); err != nil {
			t.Fatal(err)
		}
	}
}

// qpns returns n QPNs of a slot with the given low-bit flags.
func qpns(slot uint8, n int, flags uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(slot)<<16 | flags | uint32(i)
	}
	return out
}

func freePort(t *testing.T) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}

func TestProcesses(t *testing.T) {
	requireRoot(t)
	t.Run("host", func(t *testing.T) {
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
		runProcesses(t, nil, nil, addr)
	})
	t.Run("netns", func(t *testing.T) {
		p, err := netns.NewPair(t)
		if err != nil {
			t.Fatal(err)
		}
		// A fresh namespace: the RoCEv2 port itself is free.
		runProcesses(t, p.A, p.B, netip.AddrPortFrom(p.A.Addr(), 4791))
	})
}

// runProcesses: three processes in ns (nil: this one) share addr; a
// sender in senderNS gets each one exactly its QPNs, through a SIGKILL
// of one member and a new process taking its slot.
func runProcesses(t *testing.T, ns, senderNS *netns.NS, addr netip.AddrPort) {
	in := func(n *netns.NS, fn func() error) error {
		if n == nil {
			return fn()
		}
		return n.Do(fn)
	}
	var dir string
	if err := in(ns, func() (err error) { dir, err = groupDir(addr); return err }); err != nil {
		t.Fatal(err)
	}
	// Resolve the neighbour (veth) with a plain socket on addr first.
	var warm *net.UDPConn
	if err := in(ns, func() (err error) {
		warm, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var tx *net.UDPConn
	err := in(senderNS, func() (err error) {
		tx, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	buf := make([]byte, 64)
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("no warm-up datagram arrived in 20 s")
		}
		sendTo(t, tx, 0)
		warm.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := warm.Read(buf); err == nil {
			break
		}
	}
	warm.Close()

	// Three starters race for the group and its slots.
	procs := []*proc{start(t, ns, addr), start(t, ns, addr), start(t, ns, addr)}
	var all []*proc
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, p := range all {
			n, own, any, foreign := 0, 0, 0, 0
			for len(p.lines) > 0 {
				l := <-p.lines
				var q uint32
				fmt.Sscanf(l, "qpn %x", &q)
				n++
				switch {
				case q&anyMember != 0 || strings.HasPrefix(l, "short"):
					any++
				case SlotOf(q) == p.slot:
					own++
				default:
					foreign++
				}
			}
			t.Logf("slot %d: counted own %d any %d; pending %d: own %d any %d foreign %d", p.slot, p.own, p.any, n, own, any, foreign)
		}
		if m, err := ebpf.LoadPinnedMap(dir+"/socks", nil); err == nil {
			var c uint64
			for s := uint32(0); s < 8; s++ {
				err := m.Lookup(s, &c)
				t.Logf("map[%d] = %d %v", s, c, err)
			}
			m.Close()
		}
	})
	all = append(all, procs...)
	bySlot := map[uint8]*proc{}
	for _, p := range procs {
		p.waitSlot(t)
		bySlot[p.slot] = p
	}
	for s := uint8(1); s <= 3; s++ {
		if bySlot[s] == nil {
			t.Fatalf("slots %v, want 1, 2, 3", bySlot)
		}
	}
	if _, err := os.Stat(dir + "/socks"); err != nil {
		t.Fatalf("pinned map: %v", err)
	}

	const k = 300
	for i := 0; i < k; i++ {
		for s := uint32(1); s <= 3; s++ {
			sendTo(t, tx, s<<16|uint32(i))
		}
	}
	// Too short for a BTH, and slots nobody owns: the kernel picks.
	if _, err := tx.Write([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	sendTo(t, tx, qpns(0, 5, anyMember)...)
	sendTo(t, tx, qpns(200, 5, anyMember)...)
	for _, p := range procs {
		p.waitOwn(t, k)
	}
	waitAny(t, procs, 11)

	// SIGKILL the slot 2 member: its socket leaves the array with it.
	victim := bySlot[2]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Wait()
	for range victim.lines {
	}
	// The kernel dropped the dead socket from the array.
	socks, err := ebpf.LoadPinnedMap(dir+"/socks", nil)
	if err != nil {
		t.Fatal(err)
	}
	var cookie uint64
	if err := socks.Lookup(uint32(2), &cookie); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Fatalf("slot 2 after SIGKILL: cookie %d, %v; want no entry", cookie, err)
	}
	for _, s := range []uint32{1, 3} {
		if err := socks.Lookup(s, &cookie); err != nil {
			t.Fatalf("slot %d: %v", s, err)
		}
	}
	socks.Close()
	rest := []*proc{bySlot[1], bySlot[3]}
	for i := 0; i < k; i++ {
		sendTo(t, tx, 1<<16|uint32(k+i), 3<<16|uint32(k+i))
	}
	sendTo(t, tx, qpns(2, 20, anyMember)...)
	for _, p := range rest {
		p.waitOwn(t, 2*k)
	}
	waitAny(t, rest, rest[0].any+rest[1].any+20)

	// A newcomer gets the dead member's slot and its traffic.
	newcomer := start(t, ns, addr)
	all = append(all, newcomer)
	newcomer.waitSlot(t)
	if newcomer.slot != 2 {
		t.Fatalf("newcomer got slot %d, want the killed member's slot 2", newcomer.slot)
	}
	sendTo(t, tx, qpns(2, k, 0)...)
	newcomer.waitOwn(t, k)

	bySlot[1].finish(t, 2*k)
	bySlot[3].finish(t, 2*k)
	newcomer.finish(t, k)
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("group pins left behind after the last member closed: %v", err)
	}
}
