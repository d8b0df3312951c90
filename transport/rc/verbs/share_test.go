package verbs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/reuseport"
	"github.com/ucgo/ucgo/internal/roce"
)

// Child processes of the port sharing test: shareEnv holds
// "role local-ip peer-ip".
const shareEnv = "UCGO_VERBS_SHARE_CHILD"

// Messages the parent sends to every child, which echoes each back.
var shareSizes = []int{1, 1000, 1024, 1025, 5000, 64 << 10}

const shareSlot = 64 << 10 // buffer space per message

func TestMain(m *testing.M) {
	if v := os.Getenv(floorEnv); v != "" {
		if err := floorChild(v); err != nil {
			fmt.Fprintln(os.Stderr, "floor child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if v := os.Getenv(shareEnv); v != "" {
		if err := shareChild(strings.Fields(v)); err != nil {
			fmt.Fprintln(os.Stderr, "share child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// connectQP takes qp through INIT and RTR to RTS towards dqpn at dst.
func connectQP(qp *QP, dst netip.AddrPort, dqpn, sqPSN, rqPSN uint32, mtu MTU) error {
	a := QPAttr{State: QPSInit, PortNum: 1, AccessFlags: accessAll}
	if err := qp.Modify(&a, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		return err
	}
	a = QPAttr{State: QPSRTR, PathMTU: mtu, DestQPN: dqpn, RQPSN: rqPSN, MaxDestRdAtomic: 16, MinRNRTimer: 1,
		AH: AHAttr{DGID: netip.AddrFrom16(dst.Addr().As16()), DPort: dst.Port()}}
	if err := qp.Modify(&a, QPAttrState|QPAttrAV|QPAttrPathMTU|QPAttrDestQPN|QPAttrRQPSN|QPAttrMaxDestRdAtomic|QPAttrMinRNRTimer); err != nil {
		return err
	}
	a = QPAttr{State: QPSRTS, SQPSN: sqPSN, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 16}
	return qp.Modify(&a, QPAttrState|QPAttrSQPSN|QPAttrTimeout|QPAttrRetryCnt|QPAttrRNRRetry|QPAttrMaxQPRdAtomic)
}

// pollN polls cq until it has n completions, all successful.
func pollN(cq *CQ, n int) ([]WC, error) {
	var out []WC
	buf := make([]WC, 16)
	deadline := time.Now().Add(testTimeout)
	for len(out) < n {
		k := cq.Poll(buf[:min(len(buf), n-len(out))])
		for _, wc := range buf[:k] {
			if wc.Status != WCSuccess {
				return out, fmt.Errorf("completion %+v: %v", wc, wc.Status)
			}
		}
		out = append(out, buf[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				return out, fmt.Errorf("%d of %d completions after %v", len(out), n, testTimeout)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return out, nil
}

// shareChild opens a device on port 4791 of its namespace (role "shared"
// joins the group sharing it, "noshare" sets Config.NoShare, "unpriv"
// drops to user nobody first, so eBPF is refused), prints
// "ready PORT QPN SHARED UNAVAILABLE", reads the parent's "QPN PSN",
// connects, posts a receive per message, prints "connected", echoes every
// message it receives, prints "done RXDROPPED ICRCERRORS MALFORMED" and
// exits when stdin closes.
func shareChild(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("bad arguments %q", args)
	}
	role, local, peer := args[0], netip.MustParseAddr(args[1]), netip.MustParseAddr(args[2])
	if role == "unpriv" {
		if err := errors.Join(syscall.Setgroups(nil), syscall.Setgid(65534), syscall.Setuid(65534)); err != nil {
			return fmt.Errorf("drop privileges: %w", err)
		}
	}
	d, err := Open(Config{Addr: local, NoShare: role == "noshare"})
	if err != nil {
		return err
	}
	defer d.Close()
	pd, err := d.AllocPD()
	if err != nil {
		return err
	}
	cq, err := d.CreateCQ(64, nil)
	if err != nil {
		return err
	}
	mr, err := pd.RegMR(make([]byte, len(shareSizes)*shareSlot), accessAll)
	if err != nil {
		return err
	}
	qp, err := pd.CreateQP(QPInitAttr{SendCQ: cq, RecvCQ: cq, SQSigAll: true,
		Cap: QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	shared, why := d.SharedPort()
	fmt.Printf("ready %d %d %t %t\n", d.LocalAddr().Port(), qp.QPNum(), shared, errors.Is(why, reuseport.ErrUnavailable))
	in := bufio.NewReader(os.Stdin)
	var dqpn, psn uint32
	if _, err := fmt.Fscanln(in, &dqpn, &psn); err != nil {
		return fmt.Errorf("read the parent's QP: %w", err)
	}
	if err := connectQP(qp, netip.AddrPortFrom(peer, roce.Port), dqpn, 100, psn, MTU1024); err != nil {
		return err
	}
	for i := range shareSizes {
		if _, err := qp.PostRecv(RecvWR{ID: uint64(i), SG: []SGE{mr.SGE(i*shareSlot, shareSlot)}}); err != nil {
			return err
		}
	}
	fmt.Println("connected")
	wcs, err := pollN(cq, len(shareSizes))
	if err != nil {
		return err
	}
	for _, wc := range wcs {
		if wc.Opcode != WCRecv {
			return fmt.Errorf("completion %+v, want a receive", wc)
		}
		_, err := qp.PostSend(SendWR{ID: 100 + wc.WRID, Opcode: WRSend, SG: []SGE{mr.SGE(int(wc.WRID)*shareSlot, int(wc.ByteLen))}})
		if err != nil {
			return err
		}
	}
	if _, err := pollN(cq, len(shareSizes)); err != nil {
		return err
	}
	c := d.Counters()
	fmt.Printf("done %d %d %d\n", c.RxDropped, c.RxICRCErrors, c.RxMalformed)
	_, _ = io.Copy(io.Discard, in)
	return d.Close()
}

// shareProc is the parent's view of a child.
type shareProc struct {
	role    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *bufio.Reader
	port    uint16
	qpn     uint32
	shared  bool
	unavail bool
	end     *end
}

func (p *shareProc) line(t *testing.T, format string, args ...any) {
	t.Helper()
	l, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s child: %v", p.role, err)
	}
	if _, err := fmt.Sscanf(l, format, args...); err != nil {
		t.Fatalf("%s child said %q: %v", p.role, l, err)
	}
}

// TestSharedPort runs several processes in one namespace, each with its
// own device on port 4791, all talking to one device in the other
// namespace: three share the port through eBPF steering, each with QPNs
// of its own slot; one is told not to share (NoShare) and one runs as
// user nobody, where eBPF is refused; those two bind ports of their own,
// which the peer sends to. Every message to every process is echoed back
// intact, and no process drops a packet as not its own.
func TestSharedPort(t *testing.T) {
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := func(role string) *shareProc {
		cmd := pair.A.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", shareEnv, role, pair.A.Addr(), pair.B.Addr()))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &shareProc{role: role, cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
		t.Cleanup(func() {
			stdin.Close()
			if p.cmd != nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		return p
	}
	ready := func(p *shareProc) {
		t.Helper()
		p.line(t, "ready %d %d %t %t\n", &p.port, &p.qpn, &p.shared, &p.unavail)
	}
	// The sharing processes start together and race for slots; the
	// others come when 4791 is taken.
	var procs []*shareProc
	for range 3 {
		procs = append(procs, start("shared"))
	}
	for _, p := range procs {
		ready(p)
	}
	for _, role := range []string{"noshare", "unpriv"} {
		p := start(role)
		ready(p)
		procs = append(procs, p)
	}
	slots := map[uint8]bool{}
	for _, p := range procs {
		t.Logf("%s: port %d QPN %#06x shared %t", p.role, p.port, p.qpn, p.shared)
		switch p.role {
		case "shared":
			if p.port != roce.Port || !p.shared {
				t.Fatalf("%s child on port %d, shared %t: want 4791, shared", p.role, p.port, p.shared)
			}
			s := reuseport.SlotOf(p.qpn)
			if s == 0 || slots[s] {
				t.Fatalf("QPN %#06x: slot %d is 0 or another process's", p.qpn, s)
			}
			slots[s] = true
		default:
			if p.port == roce.Port || p.shared || reuseport.SlotOf(p.qpn) != 0 {
				t.Fatalf("%s child: port %d, shared %t, QPN %#06x: want a port of its own", p.role, p.port, p.shared, p.qpn)
			}
			if p.unavail != (p.role == "unpriv") {
				t.Fatalf("%s child: reuseport unavailable %t", p.role, p.unavail)
			}
		}
	}

	var d *Device
	if err := pair.B.Do(func() error {
		var err error
		d, err = Open(Config{Addr: pair.B.Addr()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if shared, why := d.SharedPort(); !shared || d.LocalAddr().Port() != roce.Port {
		t.Fatalf("peer device on %v, shared %t (%v)", d.LocalAddr(), shared, why)
	}
	o := rigOpts{bufSize: 2 * len(shareSizes) * shareSlot, sendWR: 64, recvWR: 64, cqe: 128}
	o.defaults()
	for i, p := range procs {
		p.end = newEnd(t, d, o)
		dst := netip.AddrPortFrom(pair.A.Addr(), p.port)
		if err := connectQP(p.end.qp, dst, p.qpn, uint32(1000*i), 100, MTU1024); err != nil {
			t.Fatal(err)
		}
		for j := range shareSizes {
			if _, err := p.end.qp.PostRecv(RecvWR{ID: uint64(j), SG: []SGE{p.end.mr.SGE(j*shareSlot, shareSlot)}}); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(p.stdin, "%d %d\n", p.end.qp.QPNum(), 1000*i)
	}
	for _, p := range procs {
		p.line(t, "connected\n")
	}
	// Interleave the messages to all processes.
	sent := make([][][]byte, len(procs))
	for j, n := range shareSizes {
		for i, p := range procs {
			msg := make([]byte, n)
			fill(msg, uint64(i<<8|j))
			sent[i] = append(sent[i], msg)
			off := (len(shareSizes) + j) * shareSlot
			copy(p.end.buf[off:], msg)
			if _, err := p.end.qp.PostSend(SendWR{ID: uint64(j), Opcode: WRSend, Flags: SendSignaled, SG: []SGE{p.end.mr.SGE(off, n)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, p := range procs {
		wcs := poll(t, p.end.cq, 2*len(shareSizes), d)
		recvs := 0
		for _, wc := range wcs {
			if wc.Status != WCSuccess {
				t.Fatalf("%s child: completion %+v", p.role, wc)
			}
			if wc.Opcode != WCRecv {
				continue
			}
			recvs++
			j := int(wc.WRID)
			if wc.SrcQP != p.qpn {
				t.Errorf("%s child: echo from QP %#06x, want %#06x", p.role, wc.SrcQP, p.qpn)
			}
			sameBytes(t, fmt.Sprintf("%s child echo %d", p.role, j), p.end.buf[j*shareSlot:j*shareSlot+int(wc.ByteLen)], sent[i][j])
		}
		if recvs != len(shareSizes) {
			t.Fatalf("%s child: %d echoes, want %d", p.role, recvs, len(shareSizes))
		}
		var dropped, icrc, malformed uint64
		p.line(t, "done %d %d %d\n", &dropped, &icrc, &malformed)
		if dropped != 0 || icrc != 0 || malformed != 0 {
			t.Errorf("%s child dropped %d packets as not its own, %d with a bad ICRC, %d malformed", p.role, dropped, icrc, malformed)
		}
	}
	for _, p := range procs {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s child: %v", p.role, err)
		}
		p.cmd = nil
	}
}

// TestFallbackPort: with sharing off, a device on 4791 binds it alone when
// it is free and takes a port the kernel picks when it is not.
func TestFallbackPort(t *testing.T) {
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	err = pair.A.Do(func() error {
		d1, err := Open(Config{Addr: pair.A.Addr(), NoShare: true, ProgressInterval: -1})
		if err != nil {
			return err
		}
		defer d1.Close()
		d2, err := Open(Config{Addr: pair.A.Addr(), NoShare: true, ProgressInterval: -1})
		if err != nil {
			return err
		}
		defer d2.Close()
		if p := d1.LocalAddr().Port(); p != roce.Port {
			return fmt.Errorf("first device on port %d, want 4791", p)
		}
		if p := d2.LocalAddr().Port(); p == roce.Port || p == 0 {
			return fmt.Errorf("second device on port %d, want one of its own", p)
		}
		for _, d := range []*Device{d1, d2} {
			if shared, why := d.SharedPort(); shared || why != nil {
				return fmt.Errorf("device on %v: shared %t (%v), want neither", d.LocalAddr(), shared, why)
			}
			if first, last := d.QPNRange(); first>>16 != 0 || last != 0xffff {
				return fmt.Errorf("QPN range %#x..%#x, want slot 0", first, last)
			}
		}
		// A device that would share finds 4791 held alone and falls back too.
		d3, err := Open(Config{Addr: pair.A.Addr(), ProgressInterval: -1})
		if err != nil {
			return err
		}
		defer d3.Close()
		if shared, why := d3.SharedPort(); shared || why == nil || d3.LocalAddr().Port() == roce.Port {
			return fmt.Errorf("third device on %v: shared %t (%v), want a port of its own and a reason", d3.LocalAddr(), shared, why)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
