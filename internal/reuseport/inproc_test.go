package reuseport

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/testproc"
)

// readQPNs reads exactly n datagrams (10 s limit each) and then checks
// that no further one is queued. Short datagrams read as 1<<24 | length.
func readQPNs(t *testing.T, c *net.UDPConn, n int) []uint32 {
	t.Helper()
	var out []uint32
	buf := make([]byte, 2048)
	read := func(d time.Duration) error {
		c.SetReadDeadline(time.Now().Add(d))
		k, err := c.Read(buf)
		if err != nil {
			return err
		}
		if k >= 8 {
			out = append(out, binary.BigEndian.Uint32(buf[4:8])&0xffffff)
		} else {
			out = append(out, 1<<24|uint32(k))
		}
		return nil
	}
	for len(out) < n {
		if err := read(10 * time.Second); err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(out), n, err)
		}
	}
	if err := read(100 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("datagrams beyond the %d expected: %x (%v)", n, out[n:], err)
	}
	return out
}

func listen(t *testing.T, addr netip.AddrPort) *Member {
	t.Helper()
	m, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := bigBuffer(m.Conn()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func wantQPNs(t *testing.T, who string, got, want []uint32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s got %x, want %x", who, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s got %x, want %x", who, got, want)
		}
	}
}

// TestInProcess checks steering between sockets of one process, the
// offset of the slot byte (UDP payload byte 5) and slot reuse.
func TestInProcess(t *testing.T) {
	requireRoot(t)
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
	m1, m2 := listen(t, addr), listen(t, addr)
	if m1.Slot() != 1 || m2.Slot() != 2 {
		t.Fatalf("slots %d %d, want 1 2", m1.Slot(), m2.Slot())
	}
	if first, last := m2.QPNRange(); first != 0x020000 || last != 0x02ffff || SlotOf(first) != 2 || SlotOf(last) != 2 {
		t.Fatalf("QPN range %#x..%#x", first, last)
	}
	if _, err := os.Stat(filepath.Join(m1.Dir(), "socks")); err != nil {
		t.Fatal(err)
	}
	tx, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// Interleaved, with the reserved BTH byte 4 and the low QPN bytes
	// varying: only byte 5 decides.
	var want1, want2 []uint32
	for i := 0; i < 50; i++ {
		q1, q2 := uint32(0x01ff00|i), uint32(0x0200ff|i<<8)
		for _, q := range []uint32{q1, q2} {
			b := bth(q)
			b[4] = byte(i)
			if _, err := tx.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		want1, want2 = append(want1, q1), append(want2, q2)
	}
	wantQPNs(t, "slot 1", readQPNs(t, m1.Conn(), 50), want1)
	wantQPNs(t, "slot 2", readQPNs(t, m2.Conn(), 50), want2)

	// Unowned slots and short datagrams go where the kernel's hash
	// (same 4-tuple, so one socket) sends them.
	sendTo(t, tx, 0x000001, 0xc80000)
	if _, err := tx.Write([]byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	var n1, n2 int
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 64)
	for n1+n2 < 3 && time.Now().Before(deadline) {
		for _, c := range []struct {
			m *Member
			n *int
		}{{m1, &n1}, {m2, &n2}} {
			c.m.Conn().SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := c.m.Conn().Read(buf); err == nil {
				*c.n++
			}
		}
	}
	if n1+n2 != 3 {
		t.Fatalf("fallback datagrams: %d + %d arrived, want 3", n1, n2)
	}

	// A closed member's slot is free again.
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m1.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	m3 := listen(t, addr)
	if m3.Slot() != 1 {
		t.Fatalf("slot %d, want 1 again", m3.Slot())
	}
	sendTo(t, tx, 0x010042)
	wantQPNs(t, "new slot 1", readQPNs(t, m3.Conn(), 1), []uint32{0x010042})

	m2.Close()
	m3.Close()
	if _, err := os.Stat(m1.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pins left after the last Close: %v", err)
	}
}

func TestFull(t *testing.T) {
	requireRoot(t)
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
	var ms []*Member
	defer func() {
		for _, m := range ms {
			m.Close()
		}
	}()
	for s := 1; s < Slots; s++ {
		m, err := Listen(addr)
		if err != nil {
			t.Fatalf("member %d: %v", s, err)
		}
		if int(m.Slot()) != s {
			t.Fatalf("member %d got slot %d", s, m.Slot())
		}
		ms = append(ms, m)
	}
	if _, err := Listen(addr); !errors.Is(err, ErrFull) {
		t.Fatalf("256th member: %v, want ErrFull", err)
	}
}

func TestBadAddress(t *testing.T) {
	for _, a := range []netip.AddrPort{{}, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 0)} {
		if _, err := Listen(a); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("Listen(%v): %v, want an address error", a, err)
		}
	}
}

// TestUnprivileged runs Listen as user nobody: it must report
// ErrUnavailable so that the caller falls back to a port of its own.
func TestUnprivileged(t *testing.T) {
	requireRoot(t)
	// Make sure bpffs and the pin root exist, as for a real deployment.
	m := listen(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)))
	defer m.Close()

	bin := testproc.ExecutableForNobody(t)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), unprivEnv+"=127.0.0.1:"+strconv.Itoa(int(freePort(t))))
	testproc.AsNobody(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "unavailable" {
		t.Fatalf("unprivileged Listen: %s", got)
	}
}

func TestIPv6(t *testing.T) {
	requireRoot(t)
	c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	addr := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	m1, m2 := listen(t, addr), listen(t, addr)
	tx, err := net.DialUDP("udp6", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for i := uint32(0); i < 20; i++ {
		sendTo(t, tx, uint32(m2.Slot())<<16|i, uint32(m1.Slot())<<16|i)
	}
	for _, m := range []*Member{m1, m2} {
		for _, q := range readQPNs(t, m.Conn(), 20) {
			if SlotOf(q) != m.Slot() {
				t.Fatalf("slot %d member got QPN %#06x", m.Slot(), q)
			}
		}
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: loads eBPF programs, pins them in bpffs, may mount bpffs")
	}
}

// TestStalePinsRemoved: a group whose last member died without Close
// (here: its socket closed behind the Member's back, as when the process
// is killed) loses its pins at the next Listen on any address, and a
// Listen that fails to join a group with no member leaves no pins.
func TestStalePinsRemoved(t *testing.T) {
	requireRoot(t)
	lo := netip.MustParseAddr("127.0.0.1")
	dead, err := Listen(netip.AddrPortFrom(lo, freePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	// The socket goes as a crashed process's would: without Close.
	if err := dead.fd.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead.Dir()); err != nil {
		t.Fatalf("pins of the dead group: %v", err)
	}
	m := listen(t, netip.AddrPortFrom(lo, freePort(t)))
	if _, err := os.Stat(dead.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pins of a group without members left after another Listen: %v", err)
	}
	if _, err := os.Stat(m.Dir()); err != nil {
		t.Fatalf("pins of the live group: %v", err)
	}

	// A socket that does not share the port makes Listen fail in bind.
	held, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.LocalAddr().(*net.UDPAddr).AddrPort()
	if _, err := Listen(addr); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Listen on a port held without SO_REUSEPORT: %v, want EADDRINUSE", err)
	}
	dir, err := groupDir(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("failed Listen left pins: %v", err)
	}
}

// TestFDNotInPoller: FD is polled by its owner, so no epoll instance of
// the process (Go's network poller) watches it, while the descriptor Conn
// makes is watched.
func TestFDNotInPoller(t *testing.T) {
	requireRoot(t)
	m := listen(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)))
	watched := func() map[int]bool {
		w := map[int]bool{}
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			link, _ := os.Readlink("/proc/self/fd/" + e.Name())
			if link != "anon_inode:[eventpoll]" {
				continue
			}
			info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(info), "\n") {
				if f := strings.Fields(line); len(f) > 1 && f[0] == "tfd:" {
					n, _ := strconv.Atoi(f[1])
					w[n] = true
				}
			}
		}
		return w
	}
	if watched()[m.FD()] {
		t.Fatalf("descriptor %d of the member is in an epoll set", m.FD())
	}
	c := m.Conn()
	if c == nil {
		t.Fatal("Conn: nil")
	}
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	cfd := -1
	rc.Control(func(fd uintptr) { cfd = int(fd) })
	if !watched()[cfd] {
		t.Fatalf("Conn's descriptor %d is not in Go's poller: the check sees nothing", cfd)
	}
}
