package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestStarUDP: three members of a star reach each other both ways; one
// member's link down cuts it off and leaves the others connected; Close
// removes every namespace.
func TestStarUDP(t *testing.T) {
	s, err := NewStar(t, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, n := range s.NS {
		if n.Index() == 0 || !n.Addr().Is4() || n.Prefix().Masked() != s.NS[0].Prefix().Masked() || seen[n.Addr().String()] {
			t.Fatalf("member %d: %+v", i, n)
		}
		seen[n.Addr().String()] = true
		err := n.Do(func() error {
			ifs, err := net.Interfaces()
			if err != nil {
				return err
			}
			if len(ifs) != 2 {
				return fmt.Errorf("%d links, want lo and %s", len(ifs), n.Link())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rx := make([]*net.UDPConn, 3)
	for i, n := range s.NS {
		rx[i] = listenUDP(t, n)
	}
	for i, a := range s.NS {
		for j := range s.NS {
			if i != j {
				tx := dialUDP(t, a, rx[j].LocalAddr().(*net.UDPAddr).AddrPort())
				exchange(t, tx, rx[j], fmt.Sprintf("%d to %d", i, j))
			}
		}
	}

	// Member 2 cut off: 0 still reaches 1, nothing reaches 2.
	if err := s.NS[2].SetLink(false); err != nil {
		t.Fatal(err)
	}
	t02 := dialUDP(t, s.NS[0], rx[2].LocalAddr().(*net.UDPAddr).AddrPort())
	for i := 0; i < 5; i++ {
		t02.Write([]byte("lost"))
	}
	if got, err := recv(rx[2], 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("member 2 received %q, %v with its link down", got, err)
	}
	exchange(t, dialUDP(t, s.NS[0], rx[1].LocalAddr().(*net.UDPAddr).AddrPort()), rx[1], "0 to 1, 2 down")

	names := []string{s.name + "-hub"}
	for _, n := range s.NS {
		names = append(names, n.Name())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, n := range names {
		if _, err := os.Stat(RunDir + "/" + n); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/%s: %v, want gone", RunDir, n, err)
		}
	}
}
