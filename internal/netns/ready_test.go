package netns

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// txDropped reads how many packets the namespace's veth end dropped on
// transmit, from /proc/thread-self/net/dev inside the namespace.
func txDropped(n *NS) (uint64, error) {
	var drops uint64
	err := n.Do(func() error {
		b, err := os.ReadFile("/proc/thread-self/net/dev")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, rest, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(name) != n.Link() {
				continue
			}
			// rx: bytes packets errs drop fifo frame compressed
			// multicast, then tx: bytes packets errs drop ...
			f := strings.Fields(rest)
			if len(f) < 12 {
				return fmt.Errorf("short line %q", line)
			}
			drops, err = strconv.ParseUint(f[11], 10, 64)
			return err
		}
		return fmt.Errorf("%s not in /proc/net/dev:\n%s", n.Link(), b)
	})
	return drops, err
}

// A new pair carries the first datagram sent over it each way, at once:
// neither end drops it (nor the ARP exchange it starts), and it arrives
// well within the second ARP would wait before asking again.
func TestNewPairCarriesFirstDatagram(t *testing.T) {
	RequireRoot(t)
	const pairs = 10
	for i := 0; i < pairs; i++ {
		p, err := NewPair(t)
		if err != nil {
			t.Fatal(err)
		}
		var before [2]uint64
		for j, n := range []*NS{p.A, p.B} {
			if before[j], err = txDropped(n); err != nil {
				t.Fatal(err)
			}
		}
		ra, rb := listenUDP(t, p.A), listenUDP(t, p.B)
		ta := dialUDP(t, p.A, rb.LocalAddr().(*net.UDPAddr).AddrPort())
		tb := dialUDP(t, p.B, ra.LocalAddr().(*net.UDPAddr).AddrPort())
		for _, d := range []struct {
			tx, rx *net.UDPConn
			msg    string
		}{{ta, rb, "first a to b"}, {tb, ra, "first b to a"}} {
			if _, err := d.tx.Write([]byte(d.msg)); err != nil {
				t.Fatal(err)
			}
			// An ARP request lost on a new link is repeated after 1 s.
			if got, err := recv(d.rx, 900*time.Millisecond); err != nil || got != d.msg {
				t.Fatalf("pair %d: %q, %v; want %q at once", i, got, err, d.msg)
			}
		}
		for j, n := range []*NS{p.A, p.B} {
			after, err := txDropped(n)
			if err != nil {
				t.Fatal(err)
			}
			if after != before[j] {
				t.Errorf("pair %d: %s dropped %d packets on transmit", i, n.Link(), after-before[j])
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkNewPair is the time to build and delete a pair.
func BenchmarkNewPair(b *testing.B) {
	RequireRoot(b)
	for i := 0; i < b.N; i++ {
		p, err := New()
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
