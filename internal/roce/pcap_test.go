package roce

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wiresharkNames are Wireshark's names of the RC opcodes, as its Info
// column shows them ("RC <name> QP=0x...").
var wiresharkNames = map[Opcode]string{
	OpSendFirst: "Send First", OpSendMiddle: "Send Middle", OpSendLast: "Send Last",
	OpSendLastImm: "Send Last Immediate", OpSendOnly: "Send Only", OpSendOnlyImm: "Send Only Immediate",
	OpWriteFirst: "RDMA Write First", OpWriteMiddle: "RDMA Write Middle", OpWriteLast: "RDMA Write Last",
	OpWriteLastImm: "RDMA Write Last Immediate", OpWriteOnly: "RDMA Write Only",
	OpWriteOnlyImm: "RDMA Write Only Immediate", OpReadRequest: "RDMA Read Request",
	OpReadResponseFirst: "RDMA Read Response First", OpReadResponseMiddle: "RDMA Read Response Middle",
	OpReadResponseLast: "RDMA Read Response Last", OpReadResponseOnly: "RDMA Read Response Only",
	OpAcknowledge: "Acknowledge", OpAtomicAcknowledge: "Atomic Acknowledge",
	OpCompareSwap: "Compare Swap", OpFetchAdd: "Fetch Add",
	OpSendLastInvalidate: "Send Last Invalidate", OpSendOnlyInvalidate: "Send Only Invalidate",
}

type pcapFrame struct {
	src, dst netip.AddrPort
	p        Packet
	udp      []byte // what Append produced
}

// writeCapture writes one packet of every opcode over IPv4 and over IPv6
// (payload sizes 0..7 so every pad count occurs) and returns the frames.
func writeCapture(t *testing.T, path string) []pcapFrame {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewPcap(f)
	if err != nil {
		t.Fatal(err)
	}
	var frames []pcapFrame
	ts := time.Unix(1700000000, 123456000)
	for i, o := range allOpcodes() {
		for _, ap := range [][2]netip.AddrPort{{hostAP, netip.MustParseAddrPort("10.77.0.2:49441")}, {host6AP, vm6AP}} {
			p := samplePacket(o, 1+i%7)
			if err := w.WritePacket(ts, ap[0], ap[1], &p); err != nil {
				t.Fatal(err)
			}
			frames = append(frames, pcapFrame{src: ap[0], dst: ap[1], p: p, udp: Append(nil, &p, ap[0], ap[1])})
			ts = ts.Add(time.Millisecond)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return frames
}

// TestPcapFormat reads the capture back by hand: file header, record
// headers, Ethernet/IP/UDP headers with valid checksums, and the UDP
// payload exactly as Append produced it.
func TestPcapFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "roce.pcap")
	frames := writeCapture(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 || le.Uint16(b[4:]) != 2 || le.Uint16(b[6:]) != 4 || le.Uint32(b[20:]) != 1 {
		t.Fatalf("pcap header % x", b[:min(24, len(b))])
	}
	b = b[24:]
	for i, fr := range frames {
		if len(b) < 16 {
			t.Fatalf("frame %d: file ends", i+1)
		}
		incl, orig := int(le.Uint32(b[8:])), int(le.Uint32(b[12:]))
		if incl != orig || len(b) < 16+incl {
			t.Fatalf("frame %d: record lengths %d/%d, %d bytes left", i+1, incl, orig, len(b)-16)
		}
		frame := b[16 : 16+incl]
		b = b[16+incl:]
		v4 := fr.src.Addr().Is4()
		ipLen := 40
		if v4 {
			ipLen = 20
		}
		if len(frame) != 14+ipLen+8+len(fr.udp) {
			t.Fatalf("frame %d: %d bytes", i+1, len(frame))
		}
		ip, u := frame[14:14+ipLen], frame[14+ipLen:]
		if v4 {
			if binary.BigEndian.Uint16(frame[12:]) != 0x0800 || ip[0] != 0x45 || onesSum(0, ip) != 0xffff ||
				binary.BigEndian.Uint16(ip[4:]) != 0 || binary.BigEndian.Uint16(ip[6:]) != 0x4000 || ip[9] != 17 ||
				binary.BigEndian.Uint16(ip[2:]) != uint16(len(frame)-14) {
				t.Fatalf("frame %d: IPv4 header % x", i+1, ip)
			}
			if binary.BigEndian.Uint16(u[6:]) != 0 {
				t.Fatalf("frame %d: IPv4 UDP checksum not 0", i+1)
			}
		} else {
			var ph [8]byte
			binary.BigEndian.PutUint32(ph[:], uint32(len(u)))
			ph[7] = 17
			if binary.BigEndian.Uint16(frame[12:]) != 0x86dd || ip[0]>>4 != 6 ||
				onesSum(onesSum(onesSum(0, ip[8:40]), ph[:]), u) != 0xffff {
				t.Fatalf("frame %d: IPv6 header or UDP checksum wrong", i+1)
			}
		}
		if binary.BigEndian.Uint16(u[0:]) != fr.src.Port() || binary.BigEndian.Uint16(u[2:]) != fr.dst.Port() ||
			int(binary.BigEndian.Uint16(u[4:])) != len(u) || !bytes.Equal(u[8:], fr.udp) {
			t.Fatalf("frame %d: UDP header % x or payload differs", i+1, u[:8])
		}
		if err := CheckICRC(u[8:], fr.src, fr.dst); err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes after the last frame", len(b))
	}
}

// tsharkFields are the fields the tshark test extracts, in order.
var tsharkFields = []string{
	"frame.number", "frame.protocols", "_ws.col.Info", "_ws.expert", "_ws.malformed",
	"ip.checksum.status", "udp.checksum.status",
	"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.a",
	"infiniband.bth.se", "infiniband.bth.padcnt", "infiniband.bth.p_key",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.aeth.syndrome", "infiniband.aeth.msn",
	"infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt", "infiniband.atomicacketh.origremdt",
	"infiniband.immdt", "infiniband.ieth", "infiniband.invariant.crc",
}

// runTshark dissects path and returns one map field -> value per frame.
func runTshark(t *testing.T, path string) []map[string]string {
	t.Helper()
	return runTsharkFields(t, path, tsharkFields)
}

// runTsharkFields dissects path and returns the given fields of each frame.
func runTsharkFields(t *testing.T, path string, fields []string) []map[string]string {
	t.Helper()
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install -y tshark); skipping the Wireshark cross-check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := t.TempDir() // no personal preferences
	args := []string{"-n", "-r", path,
		"-o", "infiniband.rroce.port:4791",
		"-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
		"-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	// Heuristic dissectors of IB payloads (RPC-over-RDMA, SMB Direct,
	// ...) would parse the test payload bytes as their protocols and call
	// them malformed: switch those protocols off, the payload is opaque
	// here (but not "ethertype", which Ethernet itself needs).
	heur := exec.CommandContext(ctx, tshark, "-G", "heuristic-decodes")
	heur.Env = append(os.Environ(), "HOME="+home)
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
	cmd.Env = append(os.Environ(), "HOME="+home)
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

func hex0(n uint64, digits int) string { return fmt.Sprintf("0x%0*x", digits, n) }

// TestPcapTshark has Wireshark dissect one packet of every opcode (IPv4
// and IPv6) and checks every header field it shows against the packet,
// that no frame is malformed or carries expert info, that the IP header
// and UDP (IPv6) checksums are good and that it finds the ICRC where
// Append put it (Wireshark 4.0 does not verify the ICRC itself).
func TestPcapTshark(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "roce.pcap")
	frames := writeCapture(t, path)
	rows := runTshark(t, path)
	if len(rows) != len(frames) {
		t.Fatalf("tshark shows %d frames, want %d", len(rows), len(frames))
	}
	for i, fr := range frames {
		r, p := rows[i], &fr.p
		o := p.BTH.Opcode
		fail := func(field, want string) {
			t.Errorf("frame %d (%v over %v): tshark %s = %q, want %q", i+1, o, fr.src.Addr(), field, r[field], want)
		}
		check := func(field, want string) {
			if r[field] != want {
				fail(field, want)
			}
		}
		if !strings.Contains(r["frame.protocols"], ":udp:infiniband") {
			fail("frame.protocols", "...:udp:infiniband...")
		}
		check("_ws.expert", "")
		check("_ws.malformed", "")
		if fr.src.Addr().Is4() {
			check("ip.checksum.status", "1")  // good
			check("udp.checksum.status", "3") // not present (0), as rxe sends
		} else {
			check("udp.checksum.status", "1")
		}
		if want := fmt.Sprintf("RC %s QP=%s ", wiresharkNames[o], hex0(uint64(p.BTH.DestQP), 6)); r["_ws.col.Info"] != want {
			fail("_ws.col.Info", want)
		}
		check("infiniband.bth.opcode", strconv.Itoa(int(o)))
		check("infiniband.bth.destqp", hex0(uint64(p.BTH.DestQP), 6))
		check("infiniband.bth.psn", strconv.Itoa(int(p.BTH.PSN)))
		check("infiniband.bth.a", map[bool]string{false: "0", true: "1"}[p.BTH.AckReq])
		check("infiniband.bth.se", map[bool]string{false: "0", true: "1"}[p.BTH.SolicitedEvent])
		check("infiniband.bth.padcnt", strconv.Itoa(padFor(len(p.Payload))))
		check("infiniband.bth.p_key", strconv.Itoa(int(p.BTH.PKey)))
		va, rkey, dmalen := "", "", ""
		switch {
		case o.HasRETH():
			va, rkey, dmalen = hex0(p.RETH.VA, 16), hex0(uint64(p.RETH.RKey), 8), strconv.Itoa(int(p.RETH.DMALen))
		case o.HasAtomicETH(): // Wireshark shows the AtomicETH address fields as RETH fields
			va, rkey = hex0(p.Atomic.VA, 16), hex0(uint64(p.Atomic.RKey), 8)
		}
		check("infiniband.reth.va", va)
		check("infiniband.reth.r_key", rkey)
		check("infiniband.reth.dmalen", dmalen)
		syn, msn := "", ""
		if o.HasAETH() {
			syn, msn = strconv.Itoa(int(p.AETH.Syndrome)), strconv.Itoa(int(p.AETH.MSN))
		}
		check("infiniband.aeth.syndrome", syn)
		check("infiniband.aeth.msn", msn)
		swap, cmp := "", ""
		if o.HasAtomicETH() {
			swap, cmp = strconv.FormatUint(p.Atomic.SwapAdd, 10), strconv.FormatUint(p.Atomic.Compare, 10)
		}
		check("infiniband.atomiceth.swapdt", swap)
		check("infiniband.atomiceth.cmpdt", cmp)
		orig := ""
		if o.HasAtomicAckETH() {
			orig = strconv.FormatUint(p.AtomicAck, 10)
		}
		check("infiniband.atomicacketh.origremdt", orig)
		imm, ieth := "", ""
		if o.HasImm() {
			imm = fmt.Sprintf("%08x", p.Imm)
		}
		if o.HasIETH() {
			ieth = fmt.Sprintf("%08x", p.InvRKey)
		}
		check("infiniband.immdt", imm)
		check("infiniband.ieth", ieth)
		// Wireshark reads the ICRC field big endian.
		check("infiniband.invariant.crc", hex0(uint64(binary.BigEndian.Uint32(fr.udp[len(fr.udp)-4:])), 8))
	}
}

// TestPcapTsharkDetectsMalformed is the control for TestPcapTshark: a
// READ REQUEST cut inside its RETH must be reported by the same checks.
func TestPcapTsharkDetectsMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewPcap(f)
	if err != nil {
		t.Fatal(err)
	}
	p := samplePacket(OpReadRequest, 0)
	if err := w.WriteUDP(time.Unix(1700000000, 0), hostAP, vmAP, Append(nil, &p, hostAP, vmAP)[:20]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rows := runTshark(t, path)
	if len(rows) != 1 {
		t.Fatalf("%d frames", len(rows))
	}
	if rows[0]["_ws.malformed"] == "" && rows[0]["_ws.expert"] == "" {
		t.Fatalf("truncated READ REQUEST: tshark reports neither malformed nor expert info: %v", rows[0])
	}
}

func TestPcapRejectsMixedFamilies(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcap(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteUDP(time.Now(), hostAP, vm6AP, make([]byte, 16)); err == nil {
		t.Fatal("mixed families accepted")
	}
	if buf.Len() != 24 {
		t.Fatalf("%d bytes written, want only the 24-byte header", buf.Len())
	}
}

// TestPcapTsharkAETH has Wireshark decode the AETH syndromes the
// constructors build: kind, credit count, RNR timer and NAK code.
func TestPcapTsharkAETH(t *testing.T) {
	type tc struct {
		a     AETH
		kind  int    // Wireshark's syndrome opcode: 0 ACK, 1 RNR NAK, 3 NAK
		field string // the field carrying the 5-bit value
		value int
	}
	tcs := []tc{
		{ACK(CreditsInvalid, 1), 0, "credit_count", 31},
		{ACK(5, 2), 0, "credit_count", 5},
		{RNRNak(12, 3), 1, "timer", 12},
		{RNRNak(31, 4), 1, "timer", 31},
		{NAK(NAKPSNSequenceError, 5), 3, "error_code", 0},
		{NAK(NAKInvalidRequest, 6), 3, "error_code", 1},
		{NAK(NAKRemoteAccessError, 7), 3, "error_code", 2},
		{NAK(NAKRemoteOperationalError, 8), 3, "error_code", 3},
		{NAK(NAKInvalidRDRequest, 9), 3, "error_code", 4},
	}
	path := filepath.Join(t.TempDir(), "aeth.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewPcap(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range tcs {
		p := Packet{BTH: BTH{Opcode: OpAcknowledge, PKey: PKeyDefault, DestQP: 0x11, PSN: uint32(i)}, AETH: c.a}
		if err := w.WritePacket(time.Unix(1700000000, 0), vmAP, hostAP, &p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	const pre = "infiniband.aeth.syndrome."
	rows := runTsharkFields(t, path, []string{"_ws.expert", "_ws.malformed", pre + "opcode",
		pre + "credit_count", pre + "timer", pre + "error_code", "infiniband.aeth.msn"})
	if len(rows) != len(tcs) {
		t.Fatalf("tshark shows %d frames, want %d", len(rows), len(tcs))
	}
	for i, c := range tcs {
		want := map[string]string{
			"_ws.expert": "", "_ws.malformed": "",
			pre + "opcode": strconv.Itoa(c.kind), "infiniband.aeth.msn": strconv.Itoa(i + 1),
			pre + "credit_count": "", pre + "timer": "", pre + "error_code": "",
		}
		want[pre+c.field] = strconv.Itoa(c.value)
		for k, v := range want {
			if rows[i][k] != v {
				t.Errorf("AETH %#02x: tshark %s = %q, want %q", c.a.Syndrome, k, rows[i][k], v)
			}
		}
		if int(c.a.Kind()) != c.kind {
			t.Errorf("AETH %#02x: Kind %d, Wireshark's %d", c.a.Syndrome, c.a.Kind(), c.kind)
		}
	}
}
