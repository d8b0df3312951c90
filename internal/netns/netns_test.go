package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const childEnv = "UCGO_NETNS_CHILD"

func TestMain(m *testing.M) {
	if dst := os.Getenv(childEnv); dst != "" {
		if err := child(dst); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child prints the inode of its network namespace and sends one datagram
// "hello from child" to dst.
func child(dst string) error {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		return err
	}
	fmt.Println(st.Ino)
	c, err := net.Dial("udp", dst)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte("hello from child"))
	return err
}

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func listenUDP(t *testing.T, n *NS) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := n.Do(func() (err error) {
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.Addr(), 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialUDP(t *testing.T, n *NS, to netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := n.Do(func() (err error) {
		c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recv reads one datagram or fails after d. It skips late probes from
// exchange.
func recv(c *net.UDPConn, d time.Duration) (string, error) {
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(d))
	for {
		n, err := c.Read(buf)
		if err != nil || !strings.HasPrefix(string(buf[:n]), "probe ") {
			return string(buf[:n]), err
		}
	}
}

// exchange sends probes until one arrives (neighbour resolution may drop
// the first ones). Extra probes arriving later are skipped by recv.
func exchange(t *testing.T, tx, rx *net.UDPConn, msg string) {
	t.Helper()
	buf := make([]byte, 2048)
	for i := 0; i < 50; i++ {
		if _, err := tx.Write([]byte("probe " + msg)); err != nil {
			t.Fatalf("send: %v", err)
		}
		rx.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		for {
			n, err := rx.Read(buf)
			if err == nil && string(buf[:n]) == "probe "+msg {
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatalf("no datagram arrived in 10s")
}

func TestPairUDP(t *testing.T) {
	p, err := NewPair(t, WithMTU(4200))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*NS{p.A, p.B} {
		if !strings.HasPrefix(n.Name(), Prefix) || n.Index() == 0 || !n.Addr().Is4() {
			t.Fatalf("bad namespace %+v", n)
		}
		err := n.Do(func() error {
			ifi, err := net.InterfaceByName(n.Link())
			if err != nil {
				return err
			}
			if ifi.Index != n.Index() || ifi.MTU != 4200 || ifi.Flags&net.FlagUp == 0 {
				return fmt.Errorf("link %+v, want index %d, MTU 4200, up", ifi, n.Index())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if p.A.Prefix().Masked() != p.B.Prefix().Masked() || p.A.Addr() == p.B.Addr() {
		t.Fatalf("addresses %v %v", p.A.Prefix(), p.B.Prefix())
	}

	// A -> B and B -> A between sockets made inside Do.
	rb := listenUDP(t, p.B)
	ta := dialUDP(t, p.A, rb.LocalAddr().(*net.UDPAddr).AddrPort())
	exchange(t, ta, rb, "a to b")
	if _, err := rb.WriteToUDP([]byte("b to a"), ta.LocalAddr().(*net.UDPAddr)); err != nil {
		t.Fatal(err)
	}
	if got, err := recv(ta, 10*time.Second); err != nil || got != "b to a" {
		t.Fatalf("got %q, %v", got, err)
	}

	// The root namespace cannot reach B's address.
	if c, err := net.DialUDP("udp", nil, rb.LocalAddr().(*net.UDPAddr)); err == nil {
		c.Write([]byte("from root"))
		c.Close()
	}

	// A process started with Command runs in A and reaches B.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := p.A.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+rb.LocalAddr().String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	ino, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if want := nsInode(t, p.A.Path()); ino != want {
		t.Fatalf("child in namespace %d, want %d", ino, want)
	}
	if got, err := recv(rb, 10*time.Second); err != nil || got != "hello from child" {
		t.Fatalf("got %q, %v (a datagram from the root namespace must not arrive)", got, err)
	}

	// A program found in PATH: /proc/self/net shows the process's own
	// namespace.
	dev, err := p.B.Command("cat", "/proc/self/net/dev").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dev), p.B.Link()+":") || strings.Contains(string(dev), p.A.Link()+":") {
		t.Fatalf("cat in %s sees:\n%s", p.B.Name(), dev)
	}
}

func TestSetLink(t *testing.T) {
	p, err := NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	rb := listenUDP(t, p.B)
	ta := dialUDP(t, p.A, rb.LocalAddr().(*net.UDPAddr).AddrPort())
	exchange(t, ta, rb, "before")

	// Our end down: the route is gone, sending fails.
	if err := p.A.SetLink(false); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.Write([]byte("down")); !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("send with link down: %v, want ENETUNREACH", err)
	}
	if err := p.A.SetLink(true); err != nil {
		t.Fatal(err)
	}
	exchange(t, ta, rb, "up again")

	// Peer end down: sending succeeds, nothing arrives.
	if err := p.B.SetLink(false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := ta.Write([]byte("lost")); err != nil {
			t.Fatalf("send with peer down: %v", err)
		}
	}
	if got, err := recv(rb, 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("received %q, %v with peer link down", got, err)
	}
	if err := p.B.SetLink(true); err != nil {
		t.Fatal(err)
	}
	exchange(t, ta, rb, "peer up")
}

func TestCloseLeavesNothing(t *testing.T) {
	p, err := NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	// A socket that outlives the pair pins namespace A.
	var fd int
	err = p.A.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	names := []string{p.A.Name(), p.B.Name()}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ents, err := os.ReadDir(RunDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		for _, n := range names {
			if e.Name() == n {
				t.Errorf("%s/%s still exists", RunDir, n)
			}
		}
	}
	// The namespace the socket pins no longer holds the veth.
	nsfd, err := unix.IoctlRetInt(fd, unix.SIOCGSKNS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(nsfd)
	err = do(fmt.Sprintf("/proc/self/fd/%d", nsfd), func() error {
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		for _, ifi := range ifs {
			if ifi.Name != "lo" {
				return fmt.Errorf("link %s left behind", ifi.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDoRestoresThread(t *testing.T) {
	p, err := NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	root := nsInode(t, "/proc/thread-self/ns/net")
	want := nsInode(t, p.B.Path())
	for i := 0; i < 20; i++ {
		err := p.B.Do(func() error {
			if got := nsInode(t, "/proc/thread-self/ns/net"); got != want {
				return fmt.Errorf("inside Do: namespace %d, want %d", got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Many goroutines on fresh threads must all still be in the root
	// namespace.
	errc := make(chan error, 16)
	for i := 0; i < cap(errc); i++ {
		go func() {
			var st unix.Stat_t
			err := unix.Stat("/proc/thread-self/ns/net", &st)
			if err == nil && st.Ino != root {
				err = fmt.Errorf("thread in namespace %d, want root %d", st.Ino, root)
			}
			errc <- err
		}()
	}
	for i := 0; i < cap(errc); i++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if err := p.B.Do(func() error { return unix.EPERM }); !errors.Is(err, unix.EPERM) {
		t.Fatalf("Do error %v, want EPERM", err)
	}
}

func TestSweep(t *testing.T) {
	RequireRoot(t)
	// A namespace file named for a process that is gone.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%s%d-%s-a", Prefix, cmd.Process.Pid, "deadbeef")
	path, err := create(dead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remove(path) })
	// One of a live process (this one) stays.
	live, err := create(fmt.Sprintf("%s%d-%s-a", Prefix, os.Getpid(), "sweeptest"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remove(live) })
	Sweep()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s survived the sweep: %v", path, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("live namespace swept: %v", err)
	}
}
