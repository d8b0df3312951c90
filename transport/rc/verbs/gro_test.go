package verbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/roce"
)

// kernelGRO reports whether the kernel accepts UDP_GRO on a UDP socket.
func kernelGRO(t *testing.T) bool {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	return enableGRO(fd)
}

// TestGROReceivesGSOMessageWhole sends a GSO message of four full
// packets and a short one over lo and checks that the receiving device
// gets it as one coalesced datagram with its segment size, and that
// cutting it gives back the five packets, each with a valid ICRC.
func TestGROReceivesGSOMessageWhole(t *testing.T) {
	if !kernelGRO(t) {
		t.Skip("no UDP GRO on this kernel")
	}
	cfg := Config{Addr: netip.MustParseAddr("127.0.0.1"), Port: -1, ProgressInterval: -1}
	tx, rx := openDevCfg(t, cfg), openDevCfg(t, cfg)
	if !tx.sock.gso {
		t.Skip("no UDP GSO on this kernel: nothing arrives coalesced")
	}
	if !rx.sock.gro {
		t.Fatal("the device's socket does not have UDP GRO on, though the kernel has it")
	}
	dst := rx.LocalAddr()
	pkts := make([]roce.Packet, 5)
	for k := range pkts {
		p := &pkts[k]
		p.BTH.Opcode = roce.OpSendMiddle
		p.BTH.PKey = 0xffff
		p.BTH.DestQP = 0x11
		p.BTH.PSN = uint32(200 + k)
		p.Payload = bytes.Repeat([]byte{byte(k + 1)}, 1024)
	}
	last := &pkts[len(pkts)-1]
	last.BTH.Opcode = roce.OpSendLast
	last.Payload = last.Payload[:100]

	// Holding rx's engine keeps its Progress away from the socket.
	rx.mu.Lock()
	defer rx.mu.Unlock()
	tx.mu.Lock()
	for k := range pkts {
		tx.emit(&pkts[k], dst)
	}
	msgs := tx.tx.n
	tx.flushTx()
	tx.mu.Unlock()
	if msgs != 1 {
		t.Fatalf("the sender batched %d messages, want one GSO message", msgs)
	}

	var n int
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		n, err = rx.rx.recv(rx.sock.fd.Int())
		if n > 0 {
			break
		}
		if !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("recv: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing received within 10 s")
		}
		pollFds([]int{rx.sock.fd.Int()}, 100*time.Millisecond)
	}
	if n != 1 {
		t.Fatalf("received %d datagrams, want the message coalesced into one", n)
	}
	b, src := rx.rx.packet(0)
	if src != tx.LocalAddr() {
		t.Errorf("source %v, want %v", src, tx.LocalAddr())
	}
	seg := rx.rx.segSize(0)
	if want := pkts[0].WireLen(); seg != want {
		t.Fatalf("segment size %d, want %d", seg, want)
	}
	for k := range pkts {
		var p []byte
		p, b = groNext(b, seg)
		want := roce.AppendIPID(nil, &pkts[k], tx.LocalAddr(), dst, uint16(k))
		if !bytes.Equal(p, want) {
			t.Fatalf("packet %d: %d bytes, not the %d bytes sent", k, len(p), len(want))
		}
		if err := roce.CheckICRC(p, src, dst); err != nil {
			t.Errorf("packet %d: %v", k, err)
		}
	}
	if len(b) != 0 {
		t.Errorf("%d bytes left after the last packet", len(b))
	}
}

// groCmsg builds the control data the kernel writes for a coalesced
// datagram of seg-byte segments.
func groCmsg(seg int32) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	if unix.SizeofCmsghdr == 16 {
		binary.NativeEndian.PutUint64(b, uint64(unix.CmsgLen(4)))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(unix.CmsgLen(4)))
	}
	binary.NativeEndian.PutUint32(b[unix.SizeofCmsghdr-8:], uint32(unix.SOL_UDP))
	binary.NativeEndian.PutUint32(b[unix.SizeofCmsghdr-4:], uint32(unix.UDP_GRO))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(seg))
	return b
}

func TestGROSegSize(t *testing.T) {
	other := groCmsg(1000)
	binary.NativeEndian.PutUint32(other[unix.SizeofCmsghdr-4:], uint32(unix.IP_TOS))
	cases := []struct {
		name string
		ctrl []byte
		seg  int
		bad  bool
	}{
		{"none", nil, 0, false},
		{"gro", groCmsg(4124), 4124, false},
		{"after another message", append(bytes.Clone(other), groCmsg(1052)...), 1052, false},
		{"other only", other, 0, false},
		{"short header", groCmsg(1000)[:unix.SizeofCmsghdr-1], 0, true},
		{"length past the end", groCmsg(1000)[:unix.CmsgLen(2)], 0, true},
		{"zero segment", groCmsg(0), 0, true},
		{"negative segment", groCmsg(-5), 0, true},
		{"huge segment", groCmsg(1 << 20), 0, true},
	}
	for _, c := range cases {
		seg, err := groSegSize(c.ctrl)
		if c.bad {
			if !errors.Is(err, errBadCmsg) {
				t.Errorf("%s: err %v, want errBadCmsg", c.name, err)
			}
			continue
		}
		if err != nil || seg != c.seg {
			t.Errorf("%s: %d, %v; want %d", c.name, seg, err, c.seg)
		}
	}
}

func TestGRONext(t *testing.T) {
	b := []byte("aaaabbbbcc")
	var got []string
	for rest := b; ; {
		var p []byte
		p, rest = groNext(rest, 4)
		got = append(got, string(p))
		if len(rest) == 0 {
			break
		}
	}
	if want := []string{"aaaa", "bbbb", "cc"}; !equalStrings(got, want) {
		t.Errorf("cut into %q, want %q", got, want)
	}
	if p, rest := groNext(b, 0); !bytes.Equal(p, b) || rest != nil {
		t.Errorf("segment size 0: %q %q, want the datagram whole", p, rest)
	}
	// A packet's capacity ends with it: appending to it cannot overwrite the next.
	p, _ := groNext(b, 4)
	if cap(p) != 4 {
		t.Errorf("packet capacity %d, want 4", cap(p))
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzGROSegSize: any control data gives a segment size within
// (0, groMaxLen] or 0 or an error, never a panic.
func FuzzGROSegSize(f *testing.F) {
	f.Add([]byte{})
	f.Add(groCmsg(4124))
	f.Add(groCmsg(-1))
	f.Add(append(groCmsg(1), groCmsg(2)...))
	f.Add(groCmsg(1000)[:unix.SizeofCmsghdr])
	f.Fuzz(func(t *testing.T, ctrl []byte) {
		seg, err := groSegSize(ctrl)
		if err != nil {
			if !errors.Is(err, errBadCmsg) || seg != 0 {
				t.Fatalf("%d, %v", seg, err)
			}
			return
		}
		if seg < 0 || seg > groMaxLen {
			t.Fatalf("segment size %d", seg)
		}
	})
}

// TestGROTransfers moves 4 MiB with an RDMA WRITE and back with a READ
// between two devices on lo at MTU 4096 and checks the data and that
// both receivers took coalesced datagrams (the WRITE's packets at the
// responder, the READ responses at the requester).
func TestGROTransfers(t *testing.T) {
	if !kernelGRO(t) {
		t.Skip("no UDP GRO on this kernel")
	}
	const n = 4 << 20
	a, b := pair(t, rigOpts{bufSize: 2 * n, mtu: MTU4096, noWatchdog: true})
	if !a.d.sock.gso {
		t.Skip("no UDP GSO on this kernel: nothing arrives coalesced")
	}
	if !a.d.sock.gro || !b.d.sock.gro {
		t.Fatal("the devices' sockets do not have UDP GRO on, though the kernel has it")
	}
	fill(a.buf[:n], 7)
	wr := SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SG: []SGE{a.mr.SGE(0, n)},
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 1, WCSuccess, WCRDMAWrite)
	if !bytes.Equal(b.buf[:n], a.buf[:n]) {
		t.Fatal("the WRITE's target differs from its source")
	}
	wr = SendWR{ID: 2, Opcode: WRRDMARead, Flags: SendSignaled, SG: []SGE{a.mr.SGE(n, n)},
		RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	if _, err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	checkWC(t, poll(t, a.cq, 1, a.d, b.d)[0], 2, WCSuccess, WCRDMARead)
	if !bytes.Equal(a.buf[n:], a.buf[:n]) {
		t.Fatal("the READ brought back other data")
	}
	ca, cb := a.d.Counters(), b.d.Counters()
	if cb.RxCoalesced == 0 || ca.RxCoalesced == 0 {
		t.Errorf("coalesced datagrams: requester %d, responder %d; want some at both", ca.RxCoalesced, cb.RxCoalesced)
	}
	if ca.RxICRCErrors+cb.RxICRCErrors+ca.RxMalformed+cb.RxMalformed != 0 {
		t.Errorf("bad packets: requester %+v, responder %+v", ca, cb)
	}
}
