package verbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/roce"
)

// capture reads every frame of one interface from an AF_PACKET socket,
// both directions.
type capture struct {
	fd     int
	frames [][]byte
	times  []time.Time
	buf    []byte
}

func newCapture(ifindex int) (*capture, error) {
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind AF_PACKET: %w", err)
	}
	return &capture{fd: fd, buf: make([]byte, 1<<17)}, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// drain reads every frame waiting on the socket.
func (c *capture) drain() error {
	for {
		n, _, err := unix.Recvfrom(c.fd, c.buf, unix.MSG_TRUNC)
		if err == unix.EAGAIN {
			return nil
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("capture: %w", err)
		}
		if n > len(c.buf) {
			return fmt.Errorf("capture: %d-byte frame", n)
		}
		c.frames = append(c.frames, bytes.Clone(c.buf[:n]))
		c.times = append(c.times, time.Now())
	}
}

func (c *capture) close() { unix.Close(c.fd) }

// roceFrame returns the IPv4 packet (header to end of the UDP datagram)
// of an Ethernet frame carrying UDP to port 4791, or nil.
func roceFrame(f []byte) []byte {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != unix.ETH_P_IP {
		return nil
	}
	ip := f[14:]
	ihl := int(ip[0]&0xf) * 4
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ip[9] != unix.IPPROTO_UDP || tot > len(ip) || tot < ihl+8 {
		return nil
	}
	ip = ip[:tot]
	if binary.BigEndian.Uint16(ip[ihl+2:]) != roce.Port {
		return nil
	}
	return ip
}

// wireICRC returns the ICRC field of an IPv4 RoCEv2 packet as sent and
// the one its headers and payload call for, computed from the definition
// (IBA A17.8): CRC-32 over 8 bytes of ones (the absent LRH), the IPv4
// header with TOS, TTL and header checksum set to ones, the UDP header
// with its checksum set to ones, the BTH with its reserved byte set to
// ones, and everything after it up to the ICRC.
func wireICRC(ip []byte) (got, want uint32) {
	ihl := int(ip[0]&0xf) * 4
	udp := ip[ihl:]
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	udp = udp[:ulen]
	var b []byte
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	h := bytes.Clone(ip[:ihl])
	h[1], h[8], h[10], h[11] = 0xff, 0xff, 0xff, 0xff
	b = append(b, h...)
	u := bytes.Clone(udp[:8+12])
	u[6], u[7] = 0xff, 0xff
	u[8+4] = 0xff
	b = append(b, u...)
	b = append(b, udp[8+12:ulen-4]...)
	return binary.LittleEndian.Uint32(udp[ulen-4:]), crc32.ChecksumIEEE(b)
}

// tsharkRows dissects path with tshark and returns the fields of every
// frame; the test is skipped when tshark is missing.
func tsharkRows(t *testing.T, path string, fields []string) []map[string]string {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install -y tshark): cannot check the capture")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := append(os.Environ(), "HOME="+t.TempDir()) // no personal preferences
	args := []string{"-n", "-r", path,
		"-o", "infiniband.rroce.port:4791",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	// The payload is opaque: keep heuristic dissectors of IB payloads
	// (SMB Direct, RPC-over-RDMA, ...) from parsing it.
	heur := exec.CommandContext(ctx, tshark, "-G", "heuristic-decodes")
	heur.Env = env
	list, err := heur.Output()
	if err != nil {
		t.Fatalf("tshark -G heuristic-decodes: %v", err)
	}
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "infiniband.payload" && f[1] != "ethertype" {
			args = append(args, "--disable-protocol", f[1])
		}
	}
	cmd := exec.CommandContext(ctx, tshark, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	var rows []map[string]string
	for _, line := range strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n") {
		vals := strings.Split(line, "\t")
		if len(vals) != len(fields) {
			t.Fatalf("tshark line with %d fields, want %d: %q", len(vals), len(fields), line)
		}
		row := map[string]string{}
		for i, f := range fields {
			row[f] = vals[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// TestCaptureTshark captures rc traffic between two namespaces on the
// veth (AF_PACKET, both directions) and has tshark dissect it: every
// opcode of RC (SEND, SEND_WITH_IMM, RDMA WRITE and WRITE_WITH_IMM, READ
// requests and responses, both atomics, each multi-packet one split into
// first, middle and last packets by a 512-byte path MTU; ACKs, atomic
// ACKs, an RNR NAK and a PSN sequence error NAK provoked by dropping
// packets with internal/fault). UDP segmentation and checksum offload
// are off on the veths, so the capture holds the packets as a NIC would
// put them on the wire. Every frame must decode as InfiniBand over UDP
// 4791 with good IP and UDP checksums, no malformed frame and no expert
// info; its ICRC, recomputed from the definition over the captured IP
// header (with its real IP ID), must match, as must tshark's opcode,
// QPN and PSN with the sender's; and the opcodes seen are exactly those
// the traffic must produce.
func TestCaptureTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (apt-get install -y tshark): cannot check the capture")
	}
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	offloads := []string{"tx-udp-segmentation", "tx-checksum-ip-generic"}
	var da, db *Device
	var capt *capture
	if err := pair.A.Do(func() error {
		if err := setFeaturesOff(pair.A.Link(), offloads...); err != nil {
			return err
		}
		da, err = Open(Config{Addr: pair.A.Addr(), ProgressInterval: -1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { da.Close() })
	if err := pair.B.Do(func() error {
		if err := setFeaturesOff(pair.B.Link(), offloads...); err != nil {
			return err
		}
		if db, err = Open(Config{Addr: pair.B.Addr(), ProgressInterval: -1}); err != nil {
			return err
		}
		capt, err = newCapture(pair.B.Index())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	defer capt.close()

	o := rigOpts{bufSize: 64 << 10, sendWR: 64, recvWR: 64, cqe: 256, mtu: MTU512, rnrTimer: 1, rnrRetry: 7}
	o.defaults()
	a, b := newEnd(t, da, o), newEnd(t, db, o)
	toRTS(t, a, b, o, 0xfffff0, 0x123) // the requester's PSNs wrap during the test
	toRTS(t, b, a, o, 0x123, 0xfffff0)
	fill(a.buf, 1)
	fill(b.buf, 2)
	devs := []*Device{da, db}
	drain := func() {
		t.Helper()
		if err := capt.drain(); err != nil {
			t.Fatal(err)
		}
	}
	var id uint64
	post := func(wr SendWR) {
		t.Helper()
		id++
		wr.ID, wr.Flags = id, wr.Flags|SendSignaled
		if _, err := a.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(n int) {
		t.Helper()
		if _, err := b.qp.PostRecv(RecvWR{ID: 1000 + id, SG: []SGE{b.mr.SGE(0, n)}}); err != nil {
			t.Fatal(err)
		}
	}
	done := func(op WCOpcode, recvOp WCOpcode) {
		t.Helper()
		checkWC(t, poll(t, a.cq, 1, devs...)[0], id, WCSuccess, op)
		if recvOp != 0xff {
			if wc := poll(t, b.cq, 1, devs...)[0]; wc.Status != WCSuccess || wc.Opcode != recvOp {
				t.Fatalf("receive completion %+v, want %v", wc, recvOp)
			}
		}
		drain()
	}
	const none = WCOpcode(0xff)
	raddr, rkey := b.mr.Addr(), b.mr.RKey()
	for _, n := range []int{100, 2000} { // one packet, and first, middle, last
		recv(n)
		post(SendWR{Opcode: WRSend, SG: []SGE{a.mr.SGE(0, n)}})
		done(WCSend, WCRecv)
		recv(n)
		post(SendWR{Opcode: WRSendWithImm, Imm: 0xabcd0000 | uint32(n), SG: []SGE{a.mr.SGE(0, n)}})
		done(WCSend, WCRecv)
		post(SendWR{Opcode: WRRDMAWrite, RemoteAddr: raddr + 4096, RKey: rkey, SG: []SGE{a.mr.SGE(0, n)}})
		done(WCRDMAWrite, none)
		recv(0)
		post(SendWR{Opcode: WRRDMAWriteWithImm, Imm: uint32(n), RemoteAddr: raddr + 8192, RKey: rkey, SG: []SGE{a.mr.SGE(0, n)}})
		done(WCRDMAWrite, WCRecvRDMAWithImm)
		post(SendWR{Opcode: WRRDMARead, RemoteAddr: raddr + 16384, RKey: rkey, SG: []SGE{a.mr.SGE(32768, n)}})
		done(WCRDMARead, none)
	}
	post(SendWR{Opcode: WRAtomicCmpAndSwp, RemoteAddr: raddr + 40960, RKey: rkey, CompareAdd: 0, Swap: 7, SG: []SGE{a.mr.SGE(40960, 8)}})
	done(WCCompSwap, none)
	post(SendWR{Opcode: WRAtomicFetchAndAdd, RemoteAddr: raddr + 40960, RKey: rkey, CompareAdd: 5, SG: []SGE{a.mr.SGE(40968, 8)}})
	done(WCFetchAdd, none)

	// RNR NAK: a SEND with no receive posted, which is posted after the
	// responder has said so.
	post(SendWR{Opcode: WRSend, SG: []SGE{a.mr.SGE(0, 300)}})
	until(t, "an RNR NAK", func() bool { return db.Counters().RNRNAKsSent > 0 }, devs...)
	recv(300)
	done(WCSend, WCRecv)

	// PSN sequence error NAK: drop half of the packets of a 40-packet
	// WRITE until the responder sees a gap, then let everything through.
	var f *fault.Fault
	qpn := b.qp.QPNum()
	if err := pair.B.Do(func() error {
		f, err = fault.Drop(pair.B.Link(), fault.Config{Fraction: 0.5, OnlyUDPPort: fault.RoCEv2Port, OnlyDestQPN: &qpn})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for try := 0; db.Counters().SeqNAKsSent == 0; try++ {
		if try == 5 {
			t.Fatal("no PSN sequence error NAK after 5 WRITEs at 50% loss")
		}
		if err := f.Set(fault.Config{Fraction: 0.5, OnlyUDPPort: fault.RoCEv2Port, OnlyDestQPN: &qpn}); err != nil {
			t.Fatal(err)
		}
		post(SendWR{Opcode: WRRDMAWrite, RemoteAddr: raddr, RKey: rkey, SG: []SGE{a.mr.SGE(0, 40*512)}})
		until(t, "a NAK or the WRITE's retransmission", func() bool {
			c := db.Counters()
			return c.SeqNAKsSent > 0 || da.Counters().Timeouts > 0
		}, devs...)
		if err := f.Set(fault.Config{}); err != nil {
			t.Fatal(err)
		}
		done(WCRDMAWrite, none)
	}
	drain()
	t.Logf("requester %+v", da.Counters())
	t.Logf("responder %+v", db.Counters())

	// What was sent, decoded by the sender's own codec, and the pcap.
	path := filepath.Join(t.TempDir(), "rc.pcap")
	pf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := roce.NewPcap(pf)
	if err != nil {
		t.Fatal(err)
	}
	type sent struct {
		ip  []byte
		pkt roce.Packet
	}
	var pkts []sent
	other := 0
	for i, fr := range capt.frames {
		ip := roceFrame(fr)
		if ip == nil {
			other++ // ARP, IPv6 neighbour discovery
			continue
		}
		if len(fr) > 14+1500 {
			t.Fatalf("frame %d of %d bytes: a GSO super-packet, not what goes on the wire", i, len(fr))
		}
		s := sent{ip: ip}
		ihl := int(ip[0]&0xf) * 4
		if err := roce.Decode(ip[ihl+8:], &s.pkt); err != nil {
			t.Fatalf("frame %d: roce.Decode: %v", i, err)
		}
		pkts = append(pkts, s)
		if err := w.WriteFrame(capt.times[i], fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := pf.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d RoCEv2 frames captured (%d others left out)", len(pkts), other)
	if os.Getenv("UCGO_KEEP_PCAP") != "" {
		keep := filepath.Join(os.TempDir(), "ucgo-rc-capture.pcap")
		if b, err := os.ReadFile(path); err == nil && os.WriteFile(keep, b, 0o644) == nil {
			t.Logf("capture kept in %s", keep)
		}
	}

	// Control: the ICRC check notices a flipped payload bit and a wrong
	// IP ID (so it really covers the header as captured).
	for _, at := range []int{len(pkts[0].ip) - 5, 5} {
		bad := bytes.Clone(pkts[0].ip)
		bad[at] ^= 1
		if got, want := wireICRC(bad); got == want {
			t.Fatalf("ICRC check does not notice a flipped bit at IP byte %d", at)
		}
	}

	fields := []string{"frame.protocols", "_ws.expert", "_ws.malformed", "ip.checksum.status", "udp.checksum.status",
		"udp.dstport", "infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
		"infiniband.aeth.syndrome", "infiniband.invariant.crc"}
	rows := tsharkRows(t, path, fields)
	if len(rows) != len(pkts) {
		t.Fatalf("tshark shows %d frames, want %d", len(rows), len(pkts))
	}
	seen := map[roce.Opcode]int{}
	syndromes := map[uint8]int{}
	for i, r := range rows {
		p := &pkts[i].pkt
		fail := func(field, want string) {
			t.Errorf("frame %d (%v PSN %d): tshark %s = %q, want %q", i+1, p.BTH.Opcode, p.BTH.PSN, field, r[field], want)
		}
		check := func(field, want string) {
			if r[field] != want {
				fail(field, want)
			}
		}
		if !strings.HasSuffix(r["frame.protocols"], ":ip:udp:infiniband") && !strings.Contains(r["frame.protocols"], ":ip:udp:infiniband:") {
			fail("frame.protocols", "eth:ethertype:ip:udp:infiniband[:data]")
		}
		check("_ws.malformed", "")
		check("_ws.expert", "")
		check("ip.checksum.status", "1")  // good
		check("udp.checksum.status", "1") // good
		check("udp.dstport", "4791")
		op, _ := strconv.Atoi(r["infiniband.bth.opcode"])
		check("infiniband.bth.opcode", strconv.Itoa(int(p.BTH.Opcode)))
		check("infiniband.bth.destqp", fmt.Sprintf("0x%06x", p.BTH.DestQP))
		check("infiniband.bth.psn", strconv.Itoa(int(p.BTH.PSN)))
		got, want := wireICRC(pkts[i].ip)
		if got != want {
			t.Errorf("frame %d (%v PSN %d, IP ID %#04x): ICRC %08x, want %08x", i+1, p.BTH.Opcode, p.BTH.PSN,
				binary.BigEndian.Uint16(pkts[i].ip[4:]), got, want)
		}
		var field [4]byte
		binary.LittleEndian.PutUint32(field[:], got)
		check("infiniband.invariant.crc", fmt.Sprintf("0x%08x", binary.BigEndian.Uint32(field[:]))) // tshark reads it big-endian
		seen[roce.Opcode(op)]++
		if s := r["infiniband.aeth.syndrome"]; s != "" {
			v, _ := strconv.Atoi(s)
			syndromes[uint8(v)]++
		}
	}
	var want []roce.Opcode
	for o := roce.OpSendFirst; o <= roce.OpFetchAdd; o++ {
		want = append(want, o)
	}
	var gotOps []roce.Opcode
	for o := range seen {
		gotOps = append(gotOps, o)
	}
	slices.Sort(gotOps)
	if !slices.Equal(gotOps, want) {
		t.Errorf("opcodes seen %v, want %v", gotOps, want)
	}
	t.Logf("opcodes %v, AETH syndromes %v", seen, syndromes)
	var ack, rnr, seq bool
	for s := range syndromes {
		switch {
		case s>>5 == uint8(roce.AckACK):
			ack = true
		case s>>5 == uint8(roce.AckRNRNak):
			rnr = true
		case s == uint8(roce.AckNAK)<<5|roce.NAKPSNSequenceError:
			seq = true
		}
	}
	if !ack || !rnr || !seq {
		t.Errorf("AETH syndromes %v: ACK %t, RNR NAK %t, PSN sequence NAK %t; want all", syndromes, ack, rnr, seq)
	}
}

// until drives the devices until cond holds.
func until(t *testing.T, what string, cond func() bool, devs ...*Device) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, testTimeout)
		}
		for _, d := range devs {
			d.Progress()
		}
		time.Sleep(50 * time.Microsecond)
	}
}
