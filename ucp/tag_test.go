package ucp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

const (
	tagQuit = 0xffffffff
	tagData = 1
	tagOK   = 2
)

func init() {
	// echo: receive anything, send it back with the same low tag bits
	// until tagQuit.
	childRoles["echo"] = func(nd *node) error {
		buf := make([]byte, 4<<20+64)
		for {
			r := nd.w.TagRecv(buf, 0, 0, nil)
			if err := nd.wait(r); err != nil {
				return err
			}
			info := r.Info()
			low := uint32(info.Tag)
			if low == tagQuit {
				return nil
			}
			s := info.Sender.TagSend(buf[:info.Length], mkTag(nd.rank, low), nil)
			if err := nd.wait(s); err != nil {
				return err
			}
			r.Release()
			s.Release()
		}
	}
	// order: send 300 messages with one tag, eager and rendezvous mixed,
	// all in flight at once, each starting with its sequence number.
	childRoles["order"] = func(nd *node) error {
		ep := nd.eps[0]
		var reqs []*Request
		for i := 0; i < 300; i++ {
			n := []int{8, 200, 3000, 70000, 16, 9000}[i%6]
			b := pattern(n, byte(i))
			binary.LittleEndian.PutUint64(b, uint64(i))
			reqs = append(reqs, ep.TagSend(b, mkTag(nd.rank, tagData), nil))
		}
		for _, r := range reqs {
			if err := nd.wait(r); err != nil {
				return err
			}
		}
		return nd.waitQuit()
	}
	// trunc: send 1000 and 100000 bytes, then report both sends' status.
	childRoles["trunc"] = func(nd *node) error {
		ep := nd.eps[0]
		a := ep.TagSend(pattern(1000, 1), mkTag(nd.rank, tagData), nil)
		b := ep.TagSend(pattern(100000, 2), mkTag(nd.rank, tagData), nil)
		var st []byte
		for _, r := range []*Request{a, b} {
			if err := nd.wait(r); err != nil {
				st = append(st, []byte(err.Error()+";")...)
			}
		}
		if err := nd.wait(ep.TagSend(st, mkTag(nd.rank, tagOK), nil)); err != nil {
			return err
		}
		return nd.waitQuit()
	}
}

// waitQuit receives until a tagQuit message arrives.
func (nd *node) waitQuit() error {
	return nd.wait(nd.w.TagRecv(nil, tagQuit, 0xffffffff, nil))
}

func (nd *node) quit(r int) {
	nd.must(nd.wait(nd.eps[r].TagSend(nil, mkTag(0, tagQuit), nil)))
}

var protoSizes = []int{0, 1, 8, 64, 100, 101, 1000, 4095, 4096, 8000, 8180, 8181, 8192, 20000, 65536, 1 << 20, 4 << 20}

func TestTagProtocols(t *testing.T) {
	for _, mode := range []string{"none", "peer"} {
		for _, scheme := range []string{"get", "put"} {
			t.Run(mode+"/"+scheme, func(t *testing.T) {
				cfg := Config{ErrorMode: ErrorModeNone}
				if mode == "peer" {
					cfg.ErrorMode = ErrorModePeer
				}
				if scheme == "put" {
					cfg.RndvScheme = RndvPut
				}
				nd := world(t, 2, "echo", cfg, EnvErrMode+"="+mode, EnvRndvScheme+"="+scheme)
				ep := nd.eps[1]
				for i, n := range protoSizes {
					out := pattern(n, byte(i))
					in := make([]byte, n+1)
					r := nd.w.TagRecv(in, mkTag(1, uint32(100+i)), exact, nil)
					s := ep.TagSend(out, mkTag(0, uint32(100+i)), nil)
					nd.must(nd.wait(s))
					nd.must(nd.wait(r))
					checkTagRecv(t, r, mkTag(1, uint32(100+i)), ep, in, out)
					r.Release()
					s.Release()
				}
				nd.quit(1)
				nd.exitOK(1)
			})
		}
	}
}

func TestTagOrdering(t *testing.T) {
	nd := world(t, 2, "order", Config{})
	buf := make([]byte, 70000)
	for i := 0; i < 300; i++ {
		// alternate wildcard and specific receives
		mask := exact
		if i%2 == 1 {
			mask = anySrc
		}
		r := nd.w.TagRecv(buf, mkTag(1, tagData), mask, nil)
		nd.must(nd.wait(r))
		n := []int{8, 200, 3000, 70000, 16, 9000}[i%6]
		if r.Info().Length != n {
			t.Fatalf("message %d: length %d, want %d", i, r.Info().Length, n)
		}
		if seq := binary.LittleEndian.Uint64(buf); seq != uint64(i) {
			t.Fatalf("message %d overtaken by %d", i, seq)
		}
		want := pattern(n, byte(i))
		binary.LittleEndian.PutUint64(want, uint64(i))
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("message %d: content differs", i)
		}
		r.Release()
	}
	nd.quit(1)
	nd.exitOK(1)
}

func TestTagTruncation(t *testing.T) {
	for _, scheme := range []string{"get", "put"} {
		t.Run(scheme, func(t *testing.T) {
			nd := world(t, 2, "trunc", Config{}, EnvRndvScheme+"="+scheme)
			for i, n := range []int{1000, 100000} {
				buf := make([]byte, 10)
				r := nd.w.TagRecv(buf, mkTag(1, tagData), exact, nil)
				err := nd.wait(r)
				var te *TruncatedError
				if !errors.Is(err, uct.ErrMessageTruncated) || !errors.As(err, &te) || te.Length != n {
					t.Fatalf("message %d: err %v", i, err)
				}
				if r.Info().Length != n || !bytes.Equal(buf, pattern(n, byte(i+1))[:10]) {
					t.Fatalf("message %d: info %+v, data %x", i, r.Info(), buf)
				}
			}
			st := make([]byte, 1000)
			r := nd.w.TagRecv(st, mkTag(1, tagOK), exact, nil)
			nd.must(nd.wait(r))
			if r.Info().Length != 0 {
				t.Fatalf("sender saw errors: %s", st[:r.Info().Length])
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}

func TestTagProbe(t *testing.T) {
	nd := world(t, 2, "echo", Config{})
	ep := nd.eps[1]
	for i, n := range []int{50, 100000} {
		tag := uint32(500 + i)
		nd.must(nd.wait(ep.TagSend(pattern(n, 9), mkTag(0, tag), nil)))
		if info, ok := nd.w.TagProbe(mkTag(1, 999), exact); ok {
			t.Fatalf("probe found %+v", info)
		}
		var m *Message
		ctx, cancel := testCtx()
		for {
			if info, ok := nd.w.TagProbe(mkTag(0, tag), 0xffffffff); ok {
				if info.Length != n || info.Tag != mkTag(1, tag) {
					t.Fatalf("peek info %+v", info)
				}
				if m, ok = nd.w.TagProbeRemove(mkTag(0, tag), 0xffffffff); !ok {
					t.Fatal("peeked message not found by TagProbeRemove")
				}
				break
			}
			nd.w.Progress()
			if ctx.Err() != nil {
				t.Fatal("probe: message never arrived")
			}
		}
		cancel()
		if m.Info.Length != n || m.Info.Tag != mkTag(1, tag) || m.Info.Sender != ep {
			t.Fatalf("probe info %+v", m.Info)
		}
		if _, ok := nd.w.TagProbe(mkTag(0, tag), 0xffffffff); ok {
			t.Fatal("removed message still probed")
		}
		buf := make([]byte, n)
		r := nd.w.TagRecvMessage(buf, m, nil)
		nd.must(nd.wait(r))
		if !bytes.Equal(buf, pattern(n, 9)) {
			t.Fatalf("size %d: content differs", n)
		}
	}
	nd.quit(1)
	nd.exitOK(1)
}

func TestCancelRecvAndCallback(t *testing.T) {
	nd := world(t, 2, "echo", Config{})
	calls := 0
	r := nd.w.TagRecv(make([]byte, 8), mkTag(1, 77), exact, &Params{Callback: func(*Request) { calls++ }})
	if !r.Cancel() {
		t.Fatal("cancel of a posted receive failed")
	}
	if err := nd.wait(r); !errors.Is(err, uct.ErrCanceled) {
		t.Fatalf("canceled receive: %v", err)
	}
	if r.Cancel() {
		t.Fatal("second cancel succeeded")
	}
	nd.w.Progress()
	if calls != 1 {
		t.Fatalf("callback ran %d times", calls)
	}
	// a callback of a completed send runs once, from Progress
	sent := 0
	s := nd.eps[1].TagSend([]byte("x"), mkTag(0, 78), &Params{Callback: func(*Request) { sent++ }})
	if sent != 0 {
		t.Fatal("callback ran inside TagSend")
	}
	nd.must(nd.wait(s))
	nd.w.Progress()
	if sent != 1 {
		t.Fatalf("send callback ran %d times", sent)
	}
	in := make([]byte, 8)
	nd.must(nd.wait(nd.w.TagRecv(in, mkTag(1, 78), exact, nil)))
	nd.quit(1)
	nd.exitOK(1)
}

// checkTagRecv checks that receive r into in took out, with tag, from
// sender.
func checkTagRecv(t *testing.T, r *Request, tag uint64, sender *Endpoint, in, out []byte) {
	t.Helper()
	n := len(out)
	if got := r.Info(); got.Length != n || got.Tag != tag || got.Sender != sender {
		t.Fatalf("size %d: info %+v", n, got)
	}
	if !bytes.Equal(in[:n], out) {
		t.Fatalf("size %d: content differs", n)
	}
}
