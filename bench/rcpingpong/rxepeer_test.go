package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Work completion statuses (ibv_wc_status) and opcodes the suites expect.
const (
	wcSuccess        = 0
	wcRemAccessErr   = 10
	wcRetryExcErr    = 12
	wcRNRRetryExcErr = 13
	wcOpRecv         = 128
)

// peerKey is what a peer needs to reach a QP and its registered memory.
type peerKey struct {
	QPN, PSN, RKey uint32
	VAddr          uint64
	GID            [16]byte
}

// connParams are the RTR/RTS attributes a peer's QP is connected with.
type connParams struct {
	MTU                                        int
	Timeout, Retry, RNRRetry, MinRNR, RdAtomic uint8
}

// defaultConn are rc_pingpong's attributes, but with retry counts that end.
var defaultConn = connParams{MTU: 1024, Timeout: 14, Retry: 3, RNRRetry: 7, MinRNR: 12, RdAtomic: 4}

// wcResult is a work completion as a peer reports it.
type wcResult struct {
	Status  int
	Name    string
	Vendor  uint32
	Opcode  int
	ByteLen uint32
	Imm     int64 // -1: none
}

func (w wcResult) String() string {
	return fmt.Sprintf("%s (%d) vendor %#x opcode %d len %d imm %d", w.Name, w.Status, w.Vendor, w.Opcode, w.ByteLen, w.Imm)
}

// rcPeer is one end of an RC connection driven by the suites: an
// rdma-core QP in the VM (rxepeer) or one of ours.
type rcPeer interface {
	Name() string
	Key() (peerKey, error)
	Connect(remote peerKey, p connParams) error
	Fill(seed uint32) error
	Set(off int, b []byte) error
	Dump(off, n int) ([]byte, error)
	// Op posts one signaled work request and waits for its completion:
	// "write", "read" (n bytes between local loff and remote roff),
	// "cas" (a1 compare, a2 swap), "fadd" (a1 addend), "send" (a1 the
	// immediate, or ^0 for none). keyXor is xor'ed into the remote key.
	Op(op string, loff, roff, n int, keyXor uint32, a1, a2 uint64) (wcResult, error)
	PostRecv(off, n int) error
	WaitRecv() (wcResult, error)
	Close() error
}

// pattern is the fill pattern of both rxepeer.c and our peers.
func pattern(i int, seed uint32) byte { return byte(uint32(i)*31 + seed + uint32(i>>8)*7) }

func patternBytes(off, n int, seed uint32) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(off+i, seed)
	}
	return b
}

// rxePeerCtl drives an rxepeer process in the VM over its TCP control
// connection.
type rxePeerCtl struct {
	name string
	c    net.Conn
	r    *bufio.Reader
}

func dialRxePeer(ctx context.Context, name, addr string) (*rxePeerCtl, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return &rxePeerCtl{name: name, c: c, r: bufio.NewReaderSize(c, 1<<18)}, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.EHOSTUNREACH) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rxepeer %s: %w", addr, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (p *rxePeerCtl) Name() string { return p.name }

func (p *rxePeerCtl) cmd(format string, args ...any) (string, error) {
	p.c.SetDeadline(time.Now().Add(40 * time.Second))
	line := fmt.Sprintf(format, args...)
	if _, err := fmt.Fprintf(p.c, "%s\n", line); err != nil {
		return "", fmt.Errorf("%s: %s: %w", p.name, line, err)
	}
	ans, err := p.r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("%s: %s: %w", p.name, line, err)
	}
	ans = strings.TrimRight(ans, "\r\n")
	if strings.HasPrefix(ans, "err") {
		return ans, fmt.Errorf("%s: %s: %s", p.name, line, ans)
	}
	return ans, nil
}

func (p *rxePeerCtl) ok(format string, args ...any) error {
	ans, err := p.cmd(format, args...)
	if err == nil && ans != "ok" {
		err = fmt.Errorf("%s: %q answered %q", p.name, fmt.Sprintf(format, args...), ans)
	}
	return err
}

func (p *rxePeerCtl) Key() (peerKey, error) {
	ans, err := p.cmd("key")
	if err != nil {
		return peerKey{}, err
	}
	var k peerKey
	var gid string
	if _, err := fmt.Sscanf(ans, "key %x %x %x %x %s", &k.QPN, &k.PSN, &k.RKey, &k.VAddr, &gid); err != nil {
		return k, fmt.Errorf("%s: key %q: %w", p.name, ans, err)
	}
	g, err := hex.DecodeString(gid)
	if err != nil || len(g) != 16 {
		return k, fmt.Errorf("%s: key %q: bad GID", p.name, ans)
	}
	copy(k.GID[:], g)
	return k, nil
}

func (p *rxePeerCtl) Connect(k peerKey, c connParams) error {
	return p.ok("connect %x %x %x %x %x %d %d %d %d %d %d", k.QPN, k.PSN, k.RKey, k.VAddr, k.GID[:],
		c.MTU, c.Timeout, c.Retry, c.RNRRetry, c.MinRNR, c.RdAtomic)
}

func (p *rxePeerCtl) Fill(seed uint32) error { return p.ok("fill %d", seed) }

func (p *rxePeerCtl) Set(off int, b []byte) error { return p.ok("set %d %x", off, b) }

func (p *rxePeerCtl) Dump(off, n int) ([]byte, error) {
	ans, err := p.cmd("dump %d %d", off, n)
	if err != nil {
		return nil, err
	}
	h, ok := strings.CutPrefix(ans, "data ")
	if !ok {
		return nil, fmt.Errorf("%s: dump answered %.40q", p.name, ans)
	}
	return hex.DecodeString(h)
}

func parseWC(name, ans string, recv bool) (wcResult, error) {
	w := wcResult{Imm: -1}
	if ans == "timeout" {
		return w, fmt.Errorf("%s: no completion in time", name)
	}
	f := strings.Fields(ans)
	// wc STATUS NAME... VENDOR OPCODE BYTELEN [IMM]; NAME has spaces.
	tail := 3
	if recv {
		tail = 4
	}
	if len(f) < 3+tail || f[0] != "wc" {
		return w, fmt.Errorf("%s: completion %q", name, ans)
	}
	nums := f[len(f)-tail:]
	w.Name = strings.Join(f[2:len(f)-tail], " ")
	var err error
	_, err = fmt.Sscanf(f[1]+" "+strings.Join(nums[:3], " "), "%d %d %d %d", &w.Status, &w.Vendor, &w.Opcode, &w.ByteLen)
	if err == nil && recv {
		_, err = fmt.Sscanf(nums[3], "%d", &w.Imm)
	}
	if err != nil {
		return w, fmt.Errorf("%s: completion %q: %w", name, ans, err)
	}
	return w, nil
}

func (p *rxePeerCtl) Op(op string, loff, roff, n int, keyXor uint32, a1, a2 uint64) (wcResult, error) {
	var ans string
	var err error
	switch op {
	case "write", "read":
		ans, err = p.cmd("%s %d %d %d %x", op, loff, roff, n, keyXor)
	case "cas":
		ans, err = p.cmd("cas %d %d %x %x %x", loff, roff, a1, a2, keyXor)
	case "fadd":
		ans, err = p.cmd("fadd %d %d %x %x", loff, roff, a1, keyXor)
	case "send":
		imm := int64(-1)
		if a1 != ^uint64(0) {
			imm = int64(uint32(a1))
		}
		ans, err = p.cmd("send %d %d %d", loff, n, imm)
	default:
		return wcResult{}, fmt.Errorf("op %q", op)
	}
	if err != nil {
		return wcResult{}, err
	}
	return parseWC(p.name, ans, false)
}

func (p *rxePeerCtl) PostRecv(off, n int) error { return p.ok("recv %d %d", off, n) }

func (p *rxePeerCtl) WaitRecv() (wcResult, error) {
	ans, err := p.cmd("waitrecv")
	if err != nil {
		return wcResult{}, err
	}
	return parseWC(p.name, ans, true)
}

// State returns the QP state (ibv_qp_state) of the rxepeer's QP.
func (p *rxePeerCtl) State() (int, error) {
	ans, err := p.cmd("state")
	if err != nil {
		return 0, err
	}
	var s int
	_, err = fmt.Sscanf(ans, "state %d", &s)
	return s, err
}

// Async returns the rxepeer's pending async events ("none" or a list).
func (p *rxePeerCtl) Async() (string, error) {
	ans, err := p.cmd("async")
	return strings.TrimPrefix(ans, "async "), err
}

func (p *rxePeerCtl) Close() error {
	_ = p.ok("quit")
	return p.c.Close()
}

// suite collects CHECK lines: one per checked property, "ok" or "FAIL".
type suite struct {
	w      *os.File
	failed bool
}

func (s *suite) check(name string, err error) bool {
	if err != nil {
		s.failed = true
		fmt.Fprintf(s.w, "CHECK %s FAIL: %v\n", name, err)
		return false
	}
	fmt.Fprintf(s.w, "CHECK %s ok\n", name)
	return true
}

// connectPair connects a and b to each other.
func connectPair(a, b rcPeer, pa, pb connParams) (ka, kb peerKey, err error) {
	if ka, err = a.Key(); err != nil {
		return
	}
	if kb, err = b.Key(); err != nil {
		return
	}
	if err = a.Connect(kb, pa); err != nil {
		return
	}
	err = b.Connect(ka, pb)
	return
}

func sameBytes(got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			return fmt.Errorf("%d bytes differ, first at %d: got %#x, want %#x (len %d/%d)", countDiff(got, want), i, at(got, i), want[i], len(got), len(want))
		}
	}
	return fmt.Errorf("got %d bytes, want %d", len(got), len(want))
}

func at(b []byte, i int) any {
	if i < len(b) {
		return b[i]
	}
	return "none"
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range b {
		if i >= len(a) || a[i] != b[i] {
			n++
		}
	}
	return n
}

func wantWC(w wcResult, err error, status int) error {
	if err != nil {
		return err
	}
	if w.Status != status {
		return fmt.Errorf("completion %v, want status %d", w, status)
	}
	return nil
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// oneSided runs, from a to b (already connected), RDMA WRITE, RDMA READ,
// both atomics and SEND (with and without immediate), checking every
// byte on both sides. Names of checks are prefixed with tag.
func oneSided(s *suite, tag string, a, b rcPeer) {
	const seedA, seedB = 11, 22
	if !s.check(tag+"/fill", errors.Join(a.Fill(seedA), b.Fill(seedB))) {
		return
	}
	// WRITE: one packet, then many (MTU 1024).
	for _, c := range []struct{ loff, roff, n int }{{100, 5000, 1000}, {0, 32768, 20000}} {
		name := fmt.Sprintf("%s/write-%d", tag, c.n)
		w, err := a.Op("write", c.loff, c.roff, c.n, 0, 0, 0)
		if !s.check(name+"/wc", wantWC(w, err, wcSuccess)) {
			return
		}
		got, err := b.Dump(c.roff-1, c.n+2)
		if err == nil {
			want := append(append([]byte{pattern(c.roff-1, seedB)}, patternBytes(c.loff, c.n, seedA)...), pattern(c.roff+c.n, seedB))
			err = sameBytes(got, want)
		}
		s.check(name+"/bytes", err)
	}
	// READ: many packets, from memory the WRITEs left alone.
	w, err := a.Op("read", 40000, 8000, 9000, 0, 0, 0)
	if s.check(tag+"/read-9000/wc", wantWC(w, err, wcSuccess)) {
		got, err := a.Dump(40000, 9000)
		if err == nil {
			err = sameBytes(got, patternBytes(8000, 9000, seedB))
		}
		s.check(tag+"/read-9000/bytes", err)
	}
	// CMP_AND_SWP that swaps, then one that does not.
	const v0, v1 = 0x1122334455667788, 0xcafef00d0badbeef
	if s.check(tag+"/cas/set", b.Set(64, le64(v0))) {
		for i, c := range []struct{ cmp, swap, old, after uint64 }{{v0, v1, v0, v1}, {v0, 42, v1, v1}} {
			name := fmt.Sprintf("%s/cas-%d", tag, i)
			w, err := a.Op("cas", 56, 64, 8, 0, c.cmp, c.swap)
			if !s.check(name+"/wc", wantWC(w, err, wcSuccess)) {
				break
			}
			old, err1 := a.Dump(56, 8)
			now, err2 := b.Dump(64, 8)
			err = errors.Join(err1, err2)
			if err == nil {
				err = errors.Join(sameBytes(old, le64(c.old)), sameBytes(now, le64(c.after)))
			}
			s.check(name+"/values", err)
		}
	}
	// FETCH_AND_ADD.
	if s.check(tag+"/fadd/set", b.Set(72, le64(1000))) {
		w, err := a.Op("fadd", 48, 72, 8, 0, 234, 0)
		if s.check(tag+"/fadd/wc", wantWC(w, err, wcSuccess)) {
			old, err1 := a.Dump(48, 8)
			now, err2 := b.Dump(72, 8)
			err = errors.Join(err1, err2)
			if err == nil {
				err = errors.Join(sameBytes(old, le64(1000)), sameBytes(now, le64(1234)))
			}
			s.check(tag+"/fadd/values", err)
		}
	}
	// SEND into a posted receive, then SEND_WITH_IMM.
	for i, imm := range []uint64{^uint64(0), 0x12345678} {
		name := fmt.Sprintf("%s/send-%d", tag, i)
		if !s.check(name+"/post-recv", b.PostRecv(16384, 4096)) {
			break
		}
		w, err := a.Op("send", 200+i, 0, 3000, 0, imm, 0)
		if !s.check(name+"/wc", wantWC(w, err, wcSuccess)) {
			break
		}
		rw, err := b.WaitRecv()
		if err == nil && (rw.Status != wcSuccess || rw.Opcode != wcOpRecv || rw.ByteLen != 3000 || rw.Imm != int64(int32(uint32(imm)))) {
			err = fmt.Errorf("receive completion %v, want success, RECV, 3000 bytes, imm %d", rw, int64(int32(uint32(imm))))
		}
		if !s.check(name+"/recv-wc", err) {
			break
		}
		got, err := b.Dump(16384, 3000)
		if err == nil {
			err = sameBytes(got, patternBytes(200+i, 3000, seedA))
		}
		s.check(name+"/bytes", err)
	}
}

// rxePeerBinary builds testdata/rxepeer.c for the VM (the host is Debian
// 12 like the VM image, so a dynamically linked build runs there) or
// returns why it cannot.
func rxePeerBinary(t *testing.T) (string, error) {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("no gcc to build testdata/rxepeer.c: %w", err)
	}
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		return "", fmt.Errorf("no libibverbs headers (apt-get install libibverbs-dev) to build testdata/rxepeer.c: %w", err)
	}
	out := filepath.Join(t.TempDir(), "rxepeer")
	if b, err := exec.Command(gcc, "-O2", "-Wall", "-o", out, "testdata/rxepeer.c", "-libverbs").CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc rxepeer.c: %v\n%s", err, b)
	}
	return out, nil
}

// rxePeerRoleEnv selects a child role of this test binary that drives
// rxepeer processes in the VM; its value names the role.
const rxePeerRoleEnv = "UCGO_RXEPEER_ROLE"

// runRxePeerRole runs a role and exits: 0 if every check passed.
func runRxePeerRole(role string) {
	s := &suite{w: os.Stdout}
	vm := os.Getenv("RXEVM_VM_IP")
	ctx, cancel := context.WithTimeout(context.Background(), 170*time.Second)
	defer cancel()
	switch role {
	case "loopback":
		// Two rdma-core QPs in the VM, connected through us: proves the
		// suite and rxepeer before they judge our side.
		a, err := dialRxePeer(ctx, "vm-a", net.JoinHostPort(vm, "18700"))
		if !s.check("dial-a", err) {
			break
		}
		defer a.Close()
		b, err := dialRxePeer(ctx, "vm-b", net.JoinHostPort(vm, "18701"))
		if !s.check("dial-b", err) {
			break
		}
		defer b.Close()
		if _, _, err := connectPair(a, b, defaultConn, defaultConn); !s.check("connect", err) {
			break
		}
		oneSided(s, "a-to-b", a, b)
		oneSided(s, "b-to-a", b, a)
	case "ours", "poweroff":
		runOursRole(ctx, s, role, vm)
	default:
		s.check("role", fmt.Errorf("unknown role %q", role))
	}
	if s.failed {
		os.Exit(1)
	}
	os.Exit(0)
}

var checkLineRE = regexp.MustCompile(`(?m)^CHECK (\S+) (ok|FAIL.*)$`)

// checkChecks passes when every CHECK line of out is ok and there are at
// least min of them.
func checkChecks(t *testing.T, out string, min int) {
	t.Helper()
	n := 0
	for _, m := range checkLineRE.FindAllStringSubmatch(out, -1) {
		n++
		if m[2] != "ok" {
			t.Errorf("%s: %s", m[1], m[2])
		}
	}
	if n < min {
		t.Errorf("%d checks ran, want at least %d", n, min)
	}
}

// rxePeerLoopbackCase connects two rxepeer QPs inside the VM through a
// host-side driver and runs the one-sided suite both ways: rdma-core
// against rdma-core, the reference for the cases against ours.
func rxePeerLoopbackCase() vmCase {
	return vmCase{
		name: "rxepeer-loopback",
		vm: `timeout 60 /root/rxepeer -g $RXEVM_GID_IDX -p 18700 & a=$!
timeout 60 /root/rxepeer -g $RXEVM_GID_IDX -p 18701 & b=$!
wait $a; ra=$?; wait $b; rb=$?
echo "rxepeer rc $ra $rb"; [ $ra = 0 ] && [ $rb = 0 ]`,
		host: fmt.Sprintf("%s=loopback %q", rxePeerRoleEnv, os.Args[0]),
		check: func(t *testing.T, r *caseResult) {
			wantExit(t, r, true)
			checkChecks(t, r.Host, 40)
		},
	}
}
