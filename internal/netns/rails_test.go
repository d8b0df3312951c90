package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestRails: two rails between two namespaces, each on its own subnet;
// each carries datagrams; one rail down leaves the other working; a flap
// ends with the rail up; Close removes both namespaces.
func TestRails(t *testing.T) {
	r, err := NewRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.A[0].Path() != r.A[1].Path() || r.B[0].Path() != r.B[1].Path() || r.A[0].Path() == r.B[0].Path() {
		t.Fatalf("the ends of one side are not one namespace: %s %s / %s %s", r.A[0].Path(), r.A[1].Path(), r.B[0].Path(), r.B[1].Path())
	}
	if r.A[0].Prefix().Masked() == r.A[1].Prefix().Masked() || r.A[0].Prefix().Masked() != r.B[0].Prefix().Masked() {
		t.Fatalf("subnets: rail 0 %v/%v, rail 1 %v/%v", r.A[0].Prefix(), r.B[0].Prefix(), r.A[1].Prefix(), r.B[1].Prefix())
	}
	err = r.A[0].Do(func() error {
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		if len(ifs) != 3 {
			return fmt.Errorf("%d links in A, want lo and two rails", len(ifs))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rx := []*net.UDPConn{listenUDP(t, r.B[0]), listenUDP(t, r.B[1])}
	tx := make([]*net.UDPConn, 2)
	for i := range rx {
		tx[i] = dialUDP(t, r.A[i], rx[i].LocalAddr().(*net.UDPAddr).AddrPort())
		exchange(t, tx[i], rx[i], fmt.Sprintf("rail %d", i))
	}

	// Rail 0 down: its datagrams are lost, rail 1 still carries.
	if err := r.A[0].SetLink(false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		tx[0].Write([]byte("lost"))
	}
	if msg, err := recv(rx[0], 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("rail 0 down, yet %q arrived (%v)", msg, err)
	}
	exchange(t, tx[1], rx[1], "rail 1 while rail 0 is down")

	// A flap of three short cycles ends with rail 0 up and carrying again.
	if err := r.A[0].SetLink(true); err != nil {
		t.Fatal(err)
	}
	if err := r.A[0].Flap(20*time.Millisecond, 20*time.Millisecond, 3); err != nil {
		t.Fatal(err)
	}
	if err := r.A[0].waitRunning(waitCarrier); err != nil {
		t.Fatal(err)
	}
	exchange(t, tx[0], rx[0], "rail 0 after the flap")

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{r.A[0].Path(), r.B[0].Path()} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close (%v)", p, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSetRate: a rail limited to 8 Mbit/s carries at most about that,
// while the unlimited rail beside it carries far more; removing the limit
// lifts it.
func TestSetRate(t *testing.T) {
	r, err := NewRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.A[0].SetRate(8); err != nil {
		t.Fatal(err)
	}
	// Blast for 300 ms on each rail and count what arrives until 200 ms
	// later. At 8 Mbit/s that is at most 1 MB/s over 300 ms, 50 ms of
	// queue and 200 ms of draining, plus the 256 KB bucket: about 800 KB.
	const window = 300 * time.Millisecond
	blast := func(i int) int {
		rx := listenUDP(t, r.B[i])
		tx := dialUDP(t, r.A[i], rx.LocalAddr().(*net.UDPAddr).AddrPort())
		exchange(t, tx, rx, fmt.Sprintf("rate %d", i))
		got := make(chan int)
		go func() {
			buf := make([]byte, 2048)
			n := 0
			rx.SetReadDeadline(time.Now().Add(window + 200*time.Millisecond))
			for {
				k, err := rx.Read(buf)
				if err != nil {
					got <- n
					return
				}
				n += k
			}
		}()
		payload := make([]byte, 1400)
		for end := time.Now().Add(window); time.Now().Before(end); {
			tx.Write(payload)
		}
		return <-got
	}
	limited, free := blast(0), blast(1)
	t.Logf("in %v: %d bytes on the 8 Mbit/s rail, %d on the unlimited one", window, limited, free)
	if limited == 0 || limited > 1_000_000 {
		t.Errorf("the 8 Mbit/s rail carried %d bytes in %v", limited, window)
	}
	if free <= 2*limited {
		t.Errorf("the unlimited rail carried %d bytes, the limited one %d", free, limited)
	}
	if err := r.A[0].SetRate(0); err != nil {
		t.Fatal(err)
	}
	if after := blast(0); after <= 2*limited {
		t.Errorf("after removing the limit rail 0 carried %d bytes, %d before", after, limited)
	}
}

// TestSwitchedRails: with a switch on each rail, one host's link going
// down leaves the other host's link on that rail up (carrier), the rail
// stops carrying and the other rail still does; back up, it carries
// again; Close removes the three namespaces.
func TestSwitchedRails(t *testing.T) {
	r, err := NewSwitchedRails(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	rx := []*net.UDPConn{listenUDP(t, r.B[0]), listenUDP(t, r.B[1])}
	tx := make([]*net.UDPConn, 2)
	for i := range rx {
		tx[i] = dialUDP(t, r.A[i], rx[i].LocalAddr().(*net.UDPAddr).AddrPort())
		exchange(t, tx[i], rx[i], fmt.Sprintf("rail %d", i))
	}
	if err := r.A[0].SetLink(false); err != nil {
		t.Fatal(err)
	}
	// the far end keeps its carrier: give the kernel's link watcher time
	// to take it away, as it would with a direct veth pair
	time.Sleep(100 * time.Millisecond)
	if err := r.B[0].waitRunning(time.Second); err != nil {
		t.Fatalf("the far end of the downed link lost its link: %v", err)
	}
	tx[0].Write([]byte("lost"))
	if msg, err := recv(rx[0], 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("rail 0 down, yet %q arrived (%v)", msg, err)
	}
	exchange(t, tx[1], rx[1], "rail 1 while rail 0 is down")
	if err := r.A[0].SetLink(true); err != nil {
		t.Fatal(err)
	}
	if err := r.A[0].waitRunning(waitCarrier); err != nil {
		t.Fatal(err)
	}
	exchange(t, tx[0], rx[0], "rail 0 back up")
	hub := r.hub
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{r.A[0].Path(), r.B[0].Path(), hub} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Close (%v)", p, err)
		}
	}
}
