package fault

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/netns"
)

const testPort = 14791

// bth builds a UDP payload: a 12-byte RoCEv2 BTH (RC SEND only) for qpn,
// reserved byte rsvd, then data.
func bth(qpn uint32, rsvd byte, psn uint32, data []byte) []byte {
	b := make([]byte, 12, 12+len(data))
	b[0] = 0x04 // RC SEND Only
	binary.BigEndian.PutUint16(b[2:], 0xffff)
	binary.BigEndian.PutUint32(b[4:], qpn&0xffffff)
	b[4] = rsvd
	binary.BigEndian.PutUint32(b[8:], psn&0xffffff)
	return append(b, data...)
}

type rig struct {
	p      *netns.Pair
	rx     *net.UDPConn // in B, port testPort
	tx     *net.UDPConn // in A, connected to rx
	other  *net.UDPConn // in B, another port
	toOthr *net.UDPConn // in A, connected to other
}

func newRig(t *testing.T) *rig {
	t.Helper()
	p, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{p: p}
	listen := func(port int) *net.UDPConn {
		var c *net.UDPConn
		err := p.B.Do(func() (err error) {
			c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.B.Addr(), uint16(port))))
			if err != nil {
				return err
			}
			sc, err := c.SyscallConn()
			if err != nil {
				return err
			}
			// Room for every test datagram: no loss in the socket.
			var serr error
			err = sc.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
			})
			return errors.Join(err, serr)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial := func(to *net.UDPConn) *net.UDPConn {
		var c *net.UDPConn
		err := p.A.Do(func() (err error) {
			c, err = net.DialUDP("udp", nil, to.LocalAddr().(*net.UDPAddr))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	r.rx = listen(testPort)
	r.other = listen(0)
	r.tx = dial(r.rx)
	r.toOthr = dial(r.other)
	// Resolve the neighbour before any counted traffic.
	buf := make([]byte, 64)
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("no warm-up datagram arrived in 20s")
		}
		if _, err := r.toOthr.Write([]byte("warm-up")); err != nil {
			t.Fatal(err)
		}
		r.other.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := r.other.Read(buf); err == nil {
			break
		}
	}
	drain(r.other)
	return r
}

// drain reads what is queued right now.
func drain(c *net.UDPConn) {
	buf := make([]byte, 9000)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// attach attaches a fault inside ns and closes it at cleanup.
func (r *rig) attach(t *testing.T, dir Direction, ns *netns.NS, cfg Config) *Fault {
	t.Helper()
	var f *Fault
	err := ns.Do(func() (err error) {
		f, err = Attach(ns.Link(), dir, cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// collect reads exactly n datagrams (10 s limit each), then checks that
// no further one is queued.
func collect(t *testing.T, c *net.UDPConn, n int) [][]byte {
	t.Helper()
	var out [][]byte
	buf := make([]byte, 9000)
	for len(out) < n {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", len(out), n, err)
		}
		out = append(out, bytes.Clone(buf[:k]))
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if k, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("datagram %d (%d bytes) beyond the %d expected, err %v", n+1, k, n, err)
	}
	return out
}

func TestDropFraction(t *testing.T) {
	r := newRig(t)
	f := r.attach(t, Ingress, r.p.B, Config{Fraction: 0.3, OnlyUDPPort: testPort})
	const n = 2000
	for i := 0; i < n; i++ {
		if _, err := r.tx.Write(bth(uint32(i), 0, uint32(i), []byte("payload"))); err != nil {
			t.Fatal(err)
		}
		// Traffic to another port is not matched.
		if i%10 == 0 {
			if _, err := r.toOthr.Write([]byte("other")); err != nil {
				t.Fatal(err)
			}
		}
	}
	s, err := f.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d, %+v", n, s)
	if s.Seen < n/2 || s.Seen > n {
		t.Fatalf("seen %d of %d sent", s.Seen, n)
	}
	if frac := float64(s.Dropped) / float64(s.Seen); frac < 0.2 || frac > 0.4 {
		t.Fatalf("dropped %d of %d (%.3f), want about 0.3", s.Dropped, s.Seen, frac)
	}
	if s.Corrupted != 0 {
		t.Fatalf("corrupted %d", s.Corrupted)
	}
	got := collect(t, r.rx, int(s.Seen-s.Dropped))
	if len(got) >= n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	collect(t, r.other, n/10)
}

func TestBlackHoleQPN(t *testing.T) {
	r := newRig(t)
	qpns := []uint32{0x000011, 0x010011, 0xab0011}
	victim := qpns[1]
	f := r.attach(t, Ingress, r.p.B, Config{OnlyUDPPort: testPort, OnlyDestQPN: &victim, BlackHole: true})

	send := func(per int) {
		t.Helper()
		for i := 0; i < per; i++ {
			for _, q := range qpns {
				// The reserved byte before DestQP must not matter.
				if _, err := r.tx.Write(bth(q, byte(i), uint32(i), []byte{byte(i)})); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	tally := func(dgrams [][]byte) map[uint32]int {
		m := map[uint32]int{}
		for _, d := range dgrams {
			m[binary.BigEndian.Uint32(d[4:])&0xffffff]++
		}
		return m
	}
	const per = 200
	send(per)
	got := tally(collect(t, r.rx, 2*per))
	if got[qpns[0]] != per || got[qpns[2]] != per || got[victim] != 0 {
		t.Fatalf("received per QPN %v, want %d for all but %#x", got, per, victim)
	}
	if seen, dropped := f.Counters(); seen != per || dropped != per {
		t.Fatalf("counters seen %d dropped %d, want %d %d", seen, dropped, per, per)
	}

	// Move the black hole to another QP while attached.
	victim2 := qpns[2]
	if err := f.Set(Config{OnlyUDPPort: testPort, OnlyDestQPN: &victim2, BlackHole: true}); err != nil {
		t.Fatal(err)
	}
	send(per)
	got = tally(collect(t, r.rx, 2*per))
	if got[qpns[0]] != per || got[qpns[1]] != per || got[victim2] != 0 {
		t.Fatalf("after Set: received per QPN %v, want %d for all but %#x", got, per, victim2)
	}

	// No action: everything passes, matching packets are still counted.
	if err := f.Set(Config{OnlyUDPPort: testPort, OnlyDestQPN: &victim2}); err != nil {
		t.Fatal(err)
	}
	send(per)
	collect(t, r.rx, 3*per)
	if seen, dropped := f.Counters(); seen != 3*per || dropped != 2*per {
		t.Fatalf("counters seen %d dropped %d, want %d %d", seen, dropped, 3*per, 2*per)
	}
}

func TestCorrupt(t *testing.T) {
	r := newRig(t)
	for _, off := range []uint16{12, 13, 40} {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			f := r.attach(t, Ingress, r.p.B, Config{OnlyUDPPort: testPort, Corrupt: true, Fraction: 1, CorruptOffset: off})
			data := make([]byte, 100)
			for i := range data {
				data[i] = byte(i)
			}
			msg := bth(7, 0, 1, data)
			const n = 50
			for i := 0; i < n; i++ {
				if _, err := r.tx.Write(msg); err != nil {
					t.Fatal(err)
				}
			}
			// Too short for the offset: passes unchanged.
			if _, err := r.tx.Write(msg[:off]); err != nil {
				t.Fatal(err)
			}
			got := collect(t, r.rx, n+1)
			for i, d := range got[:n] {
				want := bytes.Clone(msg)
				want[off] ^= 0xff
				if !bytes.Equal(d, want) {
					t.Fatalf("datagram %d:\n got %x\nwant %x", i, d, want)
				}
			}
			if !bytes.Equal(got[n], msg[:off]) {
				t.Fatalf("short datagram changed: %x", got[n])
			}
			s, err := f.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if s.Seen != n+1 || s.Corrupted != n || s.Dropped != 0 {
				t.Fatalf("stats %+v, want seen %d corrupted %d", s, n+1, n)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEgressBlackHole(t *testing.T) {
	r := newRig(t)
	f := r.attach(t, Egress, r.p.A, Config{OnlyUDPPort: testPort, BlackHole: true})
	for i := 0; i < 20; i++ {
		if _, err := r.tx.Write([]byte("gone")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.toOthr.Write([]byte("kept")); err != nil {
			t.Fatal(err)
		}
	}
	collect(t, r.other, 20)
	collect(t, r.rx, 0)
	if seen, dropped := f.Counters(); seen != 20 || dropped != 20 {
		t.Fatalf("seen %d dropped %d, want 20 20", seen, dropped)
	}
	// Detaching restores the path.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tx.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r.rx, 1); string(got[0]) != "back" {
		t.Fatalf("got %q", got[0])
	}
}

// TestAllIPv4: with AllIPv4 on B's ingress neither UDP nor a TCP
// connection gets through; closed, both do.
func TestAllIPv4(t *testing.T) {
	r := newRig(t)
	var ln net.Listener
	err := r.p.B.Do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(r.p.B.Addr(), 0).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dialTCP := func() error {
		return r.p.A.Do(func() error {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 500*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	if err := dialTCP(); err != nil {
		t.Fatalf("before the fault: %v", err)
	}
	f := r.attach(t, Ingress, r.p.B, Config{AllIPv4: true})
	if err := dialTCP(); err == nil {
		t.Fatal("a TCP connection got through AllIPv4")
	}
	for i := 0; i < 10; i++ {
		if _, err := r.tx.Write([]byte("gone")); err != nil {
			t.Fatal(err)
		}
	}
	collect(t, r.rx, 0)
	if seen, dropped := f.Counters(); seen < 11 || dropped != seen {
		t.Fatalf("seen %d dropped %d, want at least 11, all dropped", seen, dropped)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dialTCP(); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	if _, err := r.tx.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r.rx, 1); string(got[0]) != "back" {
		t.Fatalf("got %q", got[0])
	}
}

func TestBadConfig(t *testing.T) {
	big := uint32(1 << 24)
	for _, c := range []Config{{Fraction: -0.1}, {Fraction: 1.5}, {OnlyDestQPN: &big},
		{AllIPv4: true, BlackHole: true}, {AllIPv4: true, OnlyUDPPort: testPort}} {
		if _, err := c.encode(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
	netns.RequireRoot(t)
	if _, err := Drop("ucgo-no-such-if", Config{}); err == nil {
		t.Fatal("attached to a missing interface")
	}
}
