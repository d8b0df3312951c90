package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/ucttest"
)

func pair(t testing.TB) *ucttest.Pair {
	mdA, err := New().OpenMD(uct.MDParams{})
	if err != nil {
		t.Fatal(err)
	}
	mdB, _ := New().OpenMD(uct.MDParams{})
	a, err := mdA.OpenIface(uct.IfaceParams{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := mdB.OpenIface(uct.IfaceParams{})
	if err != nil {
		t.Fatal(err)
	}
	return &ucttest.Pair{A: a, B: b, MDA: mdA, MDB: mdB}
}

func TestConformance(t *testing.T) { ucttest.Run(t, pair) }

func openIface(t testing.TB) (uct.MD, uct.Iface) {
	t.Helper()
	md, err := New().OpenMD(uct.MDParams{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := md.OpenIface(uct.IfaceParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { it.Close(); md.Close() })
	return md, it
}

// connectedPair opens two ifaces in this process and connects tx to rx;
// the endpoint closes with the test.
func connectedPair(tb testing.TB) (rx, tx uct.Iface, ep *Endpoint) {
	tb.Helper()
	_, rx = openIface(tb)
	_, tx = openIface(tb)
	epi, err := tx.Connect(rx.Address(), uct.EPParams{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { epi.Close() })
	return rx, tx, epi.(*Endpoint)
}

// progressUntil runs Progress until cond holds; fails after 10 s.
func progressUntil(t testing.TB, it uct.Iface, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if it.Progress() == 0 && time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func sendRetry(t testing.TB, it uct.Iface, f func() error) {
	t.Helper()
	for {
		err := f()
		if err == nil {
			return
		}
		if !errors.Is(err, uct.ErrNoResource) {
			t.Fatal(err)
		}
		it.Progress()
	}
}

func TestCrossProcessAM(t *testing.T) {
	_, it := openIface(t)
	c := startChild(t, "echo")
	ep := c.connect(t, it)
	var got [][]byte
	it.SetAMHandler(amEcho, func(_ any, d []byte, _ uct.AMFlags) { got = append(got, append([]byte(nil), d...)) }, nil)
	var want [][]byte
	for _, n := range []int{0, 1, 7, 8, 50, 103, 104, 105, 200, 1000, 4096, 8000, 8192} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(n*31 + i)
		}
		want = append(want, b)
		sendRetry(t, it, func() error { _, err := ep.AMBcopy(amEcho, b, nil); return err })
	}
	pl := []byte("short!")
	sendRetry(t, it, func() error { return ep.AMShort(amEcho, 0x1122334455667788, pl) })
	want = append(want, append(binary.LittleEndian.AppendUint64(nil, 0x1122334455667788), pl...))
	sendRetry(t, it, func() error { return ep.AMZcopy(amEcho, []byte("hdr"), [][]byte{[]byte("a"), []byte("bc")}, nil) })
	want = append(want, []byte("hdrabc"))
	for i := 0; i < 2000; i++ { // more than the FIFO holds: back-pressure path
		b := []byte{byte(i), byte(i >> 8), 0xAA}
		want = append(want, b)
		sendRetry(t, it, func() error { _, err := ep.AMBcopy(amEcho, b, nil); return err })
	}
	progressUntil(t, it, "echoes", func() bool { return len(got) == len(want) })
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d: got %x want %x", i, got[i], want[i])
		}
	}
	ep.AMShort(amQuit, 0, nil)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

func TestCrossProcessRMA(t *testing.T) {
	md, it := openIface(t)
	c := startChild(t, "echo")
	ep := c.connect(t, it)
	defer ep.AMShort(amQuit, 0, nil)
	for _, tc := range []struct {
		name string
		key  []byte
		addr uint64
		atom bool
	}{{"alloc", c.rkey, c.memAddr, true}, {"register", c.rkeyR, c.regAddr, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rk, err := md.UnpackRKey(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			defer rk.Close()
			src := make([]byte, 300000)
			for i := range src {
				src[i] = byte(i * 7)
			}
			if err := ep.PutZcopy([][]byte{src[:1000], src[1000:]}, tc.addr+64, rk, nil); err != nil {
				t.Fatal(err)
			}
			dst := make([]byte, len(src))
			if err := ep.GetZcopy([][]byte{dst}, tc.addr+64, rk, nil); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, dst) {
				t.Fatal("get after put: content differs")
			}
			if err := ep.PutShort([]byte{1, 0, 0, 0, 0, 0, 0, 0}, tc.addr, rk); err != nil {
				t.Fatal(err)
			}
			err = ep.AtomicPost(uct.AtomicAdd, 8, 41, tc.addr, rk)
			if !tc.atom {
				if !errors.Is(err, uct.ErrUnsupported) {
					t.Fatalf("atomic on registered memory: %v, want ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var old uint64
			if err := ep.AtomicFetch(uct.AtomicCSwap, 8, 7, 42, &old, tc.addr, rk, nil); err != nil || old != 42 {
				t.Fatalf("cswap: old %d err %v", old, err)
			}
			ep.AtomicPost(uct.AtomicXor, 4, 0xF0, tc.addr, rk)
			ep.AtomicFetch(uct.AtomicOr, 4, 0x100, 0, &old, tc.addr, rk, nil)
			if old != 7^0xF0 {
				t.Fatalf("fetch-or 32: old %#x", old)
			}
			ep.AtomicFetch(uct.AtomicSwap, 8, 5, 0, &old, tc.addr, rk, nil)
			if old != (7^0xF0)|0x100 {
				t.Fatalf("swap: old %#x", old)
			}
			if err := ep.PutShort(src[:8], tc.addr+(1<<20)-4, rk); !errors.Is(err, uct.ErrRemoteProtection) {
				t.Fatalf("put past the end: %v", err)
			}
		})
	}
}

func TestPeerKilled(t *testing.T) {
	_, it := openIface(t)
	var handled atomic.Int32
	it.SetErrorHandler(func(arg any, ep uct.Endpoint, err error) {
		if errors.Is(err, uct.ErrPeerFailed) {
			handled.Add(1)
		}
	}, nil)
	victim := startChild(t, "echo")
	other := startChild(t, "echo")
	epV := victim.connect(t, it)
	epO := other.connect(t, it)
	echoes := 0
	it.SetAMHandler(amEcho, func(any, []byte, uct.AMFlags) { echoes++ }, nil)
	// Traffic to both peers; the victim is killed in the middle of it.
	var lastErr error
	i := 0
	progressUntil(t, it, "send to killed peer to fail", func() bool {
		i++
		if i == 200 {
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		epO.AMShort(amEcho, uint64(i), nil)
		// The victim echoes, so it is killed while it also sends to us.
		lastErr = epV.AMShort(amEcho, uint64(i), nil)
		return lastErr != nil && !errors.Is(lastErr, uct.ErrNoResource)
	})
	if i < 200 {
		t.Fatalf("send to the victim failed before the kill: %v", lastErr)
	}
	var oe *uct.OpError
	if !errors.As(lastErr, &oe) || !errors.Is(lastErr, uct.ErrPeerFailed) {
		t.Fatalf("after SIGKILL: %v, want *uct.OpError wrapping ErrPeerFailed", lastErr)
	}
	if _, err := epV.PutBcopy([]byte{1}, 0, nil); !errors.Is(err, uct.ErrPeerFailed) {
		t.Fatalf("put after death: %v", err)
	}
	if err := epV.CheckLiveness(nil); !errors.Is(err, uct.ErrPeerFailed) {
		t.Fatalf("liveness: %v", err)
	}
	ev, err := it.Events().Get(timeoutCtx(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != uct.EventPeerFailed || ev.Endpoint != epV || !errors.Is(ev.Err, uct.ErrPeerFailed) {
		t.Fatalf("event %v", ev)
	}
	ev.Ack()
	if handled.Load() != 1 {
		t.Fatalf("error handler called %d times", handled.Load())
	}
	before := echoes
	sendRetry(t, it, func() error { return epO.AMShort(amEcho, 1, nil) })
	progressUntil(t, it, "other peer's echo", func() bool { return echoes > before })
	if err := epO.CheckLiveness(nil); err != nil {
		t.Fatalf("other peer liveness: %v", err)
	}
	if err := epV.Close(); err != nil {
		t.Fatal(err)
	}
	quitChild(t, it, epO, other)
}

func TestConnectErrors(t *testing.T) {
	_, it := openIface(t)
	_, peer := openIface(t)
	good := peer.Address()
	a, err := DecodeAddress(good)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(*Address)) []byte { x := a; f(&x); return x.pack() }
	cases := []struct {
		name string
		addr []byte
		want error
	}{
		{"short", good[:10], uct.ErrInvalidAddress},
		{"magic", append([]byte{0}, good[1:]...), uct.ErrInvalidAddress},
		{"version", func() []byte { b := append([]byte(nil), good...); b[4] = 9; return b }(), uct.ErrInvalidAddress},
		{"cookie", mod(func(x *Address) { x.Cookie++ }), uct.ErrInvalidAddress},
		{"reused pid", mod(func(x *Address) { x.StartTime++ }), uct.ErrUnreachable},
		{"dead pid", mod(func(x *Address) { x.PID = deadPID(t) }), uct.ErrUnreachable},
		{"not a segment", mod(func(x *Address) { x.FD = 0 }), nil},
	}
	for _, c := range cases {
		_, err := it.Connect(c.addr, uct.EPParams{})
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	ep, err := it.Connect(good, uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	ep.Close()
}

// deadPID returns the pid of a process that has exited.
func deadPID(t testing.TB) int {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skip("no /bin/true")
	}
	p.Wait()
	return p.Pid
}

func TestArmWait(t *testing.T) {
	_, it := openIface(t)
	_, peer := openIface(t)
	ep, err := peer.Connect(it.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	it.SetAMHandler(2, func(any, []byte, uct.AMFlags) { n++ }, nil)
	if err := it.Arm(); err != nil {
		t.Fatalf("arm on empty iface: %v", err)
	}
	done := make(chan error)
	go func() { done <- it.Wait(timeoutCtx(10 * time.Second)) }()
	time.Sleep(20 * time.Millisecond)
	if err := ep.AMShort(2, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
	if err := it.Arm(); !errors.Is(err, uct.ErrBusy) {
		t.Fatalf("arm with a message waiting: %v", err)
	}
	it.Progress()
	if n != 1 {
		t.Fatalf("received %d", n)
	}
}

func FuzzDecodeAddress(f *testing.F) {
	f.Add(Address{PID: 1234, FD: 5, StartTime: 99, Cookie: 42}.pack())
	f.Add([]byte{})
	f.Add(make([]byte, addrLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAddress(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if !bytes.Equal(a.pack()[:6], b[:6]) || a.pack()[16] != b[16] {
			t.Fatalf("round trip differs")
		}
	})
}

func FuzzSegmentHeader(f *testing.F) {
	good := make([]byte, hdrSize)
	encodeHeader(good, segHeader{PID: 1, Cells: 256, StartTime: 1, Cookie: 2, CellSize: cellSize, BufSize: bufSize})
	f.Add(good, segLen(256))
	f.Add(good[:100], 0)
	f.Add(make([]byte, hdrSize), 1<<30)
	f.Fuzz(func(t *testing.T, b []byte, total int) {
		h, err := decodeHeader(b, total)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if segLen(h.Cells) > total {
			t.Fatalf("accepted header larger than the segment")
		}
	})
}

// An error handler running on a peer watcher may wake the iface while or
// after it closes: Wake must not touch the unmapped segment.
func TestWakeAfterClose(t *testing.T) {
	_, it := openIface(t)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	it.Wake()
}
