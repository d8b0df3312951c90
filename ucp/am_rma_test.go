package ucp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

const (
	amPing  = 10
	amPong  = 11
	tagKeys = 3
)

func init() {
	// am: answer every amPing on its reply endpoint with amPong carrying
	// the header and data reversed; quit on tagQuit.
	childRoles["am"] = func(nd *node) error {
		var errs []error
		nd.w.SetAMHandler(amPing, func(m *AMMessage) {
			r := m.Reply.AMSend(amPong, append([]byte(nil), m.Data...), append([]byte(nil), m.Header...), nil)
			r.Release()
		})
		if len(errs) > 0 {
			return errs[0]
		}
		return nd.waitQuit()
	}
	// rma: expose 1 MiB of registered memory and 4 KiB of allocated
	// memory, send their keys and addresses, serve until tagQuit.
	childRoles["rma"] = func(nd *node) error {
		reg := make([]byte, 1<<20)
		copy(reg, pattern(len(reg), 5))
		mr, err := nd.w.MemMap(reg)
		if err != nil {
			return err
		}
		defer mr.Close()
		ma, err := nd.w.MemAlloc(4096)
		if err != nil {
			return err
		}
		defer ma.Close()
		var msg []byte
		for _, m := range []*Mem{mr, ma} {
			k := m.PackRKey()
			msg = binary.LittleEndian.AppendUint64(msg, m.Address())
			msg = binary.LittleEndian.AppendUint16(msg, uint16(len(k)))
			msg = append(msg, k...)
		}
		if err := nd.wait(nd.eps[0].TagSend(msg, mkTag(nd.rank, tagKeys), nil)); err != nil {
			return err
		}
		return nd.waitQuit()
	}
}

func TestAMReply(t *testing.T) {
	nd := world(t, 2, "am", Config{})
	var got [][2][]byte
	nd.w.SetAMHandler(amPong, func(m *AMMessage) {
		if m.Reply != nd.eps[1] {
			t.Errorf("reply endpoint %v", m.Reply)
		}
		got = append(got, [2][]byte{append([]byte(nil), m.Header...), append([]byte(nil), m.Data...)})
	})
	for i, n := range []int{0, 10, 1000, 8000} {
		hdr := pattern(i+1, 3)
		data := pattern(n, byte(i))
		nd.must(nd.wait(nd.eps[1].AMSend(amPing, hdr, data, nil)))
		ctx, cancel := testCtx()
		for len(got) <= i && ctx.Err() == nil {
			nd.w.Progress()
		}
		cancel()
		if len(got) <= i {
			t.Fatalf("no reply to AM %d", i)
		}
		if !bytes.Equal(got[i][0], data) || !bytes.Equal(got[i][1], hdr) {
			t.Fatalf("AM %d: reply differs", i)
		}
	}
	big := nd.eps[1].AMSend(amPing, make([]byte, nd.eps[1].MaxAM()+1), []byte{1}, nil)
	if err := nd.wait(big); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("header over one fragment: %v", err)
	}
	nd.quit(1)
	nd.exitOK(1)
}

type remoteMem struct {
	addr uint64
	key  *RKey
}

func recvKeys(t testing.TB, nd *node, r int) []remoteMem {
	buf := make([]byte, 4096)
	req := nd.w.TagRecv(buf, mkTag(r, tagKeys), exact, nil)
	nd.must(nd.wait(req))
	b := buf[:req.Info().Length]
	var out []remoteMem
	for len(b) > 0 {
		addr := binary.LittleEndian.Uint64(b)
		n := int(binary.LittleEndian.Uint16(b[8:]))
		k, err := nd.eps[r].UnpackRKey(b[10 : 10+n])
		nd.must(err)
		t.Cleanup(func() { k.Close() })
		out = append(out, remoteMem{addr, k})
		b = b[10+n:]
	}
	return out
}

func TestPutGetAtomics(t *testing.T) {
	nd := world(t, 2, "rma", Config{})
	ep := nd.eps[1]
	keys := recvKeys(t, nd, 1)
	reg, alloc := keys[0], keys[1]

	// get the child's pattern, put a new one, get it back
	in := make([]byte, 1<<20)
	nd.must(nd.wait(ep.Get(in, reg.addr, reg.key, nil)))
	if !bytes.Equal(in, pattern(1<<20, 5)) {
		t.Fatal("get: content differs")
	}
	out := pattern(300000, 77)
	nd.must(nd.wait(ep.Put(out, reg.addr+1000, reg.key, nil)))
	nd.must(nd.wait(ep.Flush(nil)))
	back := make([]byte, len(out))
	nd.must(nd.wait(ep.Get(back, reg.addr+1000, reg.key, nil)))
	if !bytes.Equal(back, out) {
		t.Fatal("put/get: content differs")
	}

	// atomics on allocated memory
	a := alloc.addr + 64
	var old uint64
	nd.must(nd.wait(ep.AtomicFetch(AtomicSwap, 100, 0, &old, a, alloc.key, nil)))
	nd.must(nd.wait(ep.AtomicPost(AtomicAdd, 5, a, alloc.key, nil)))
	nd.must(nd.wait(ep.AtomicFetch(AtomicAdd, 1, 0, &old, a, alloc.key, nil)))
	if old != 105 {
		t.Fatalf("fetch-add returned %d, want 105", old)
	}
	nd.must(nd.wait(ep.AtomicFetch(AtomicCSwap, 7, 999, &old, a, alloc.key, nil)))
	if old != 106 {
		t.Fatalf("failed cswap returned %d, want 106", old)
	}
	nd.must(nd.wait(ep.AtomicFetch(AtomicCSwap, 7, 106, &old, a, alloc.key, nil)))
	nd.must(nd.wait(ep.AtomicFetch(AtomicAdd, 0, 0, &old, a, alloc.key, nil)))
	if old != 7 {
		t.Fatalf("after cswap: %d, want 7", old)
	}
	nd.must(nd.wait(nd.w.Flush(nil)))

	// A remote access error is endpoint-fatal (as for a verbs QP): the
	// endpoint fails and new operations fail fast with its status.
	if err := nd.wait(ep.Get(in[:8], reg.addr+1<<20, reg.key, nil)); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("get beyond the region: %v", err)
	}
	if err := nd.wait(ep.TagSend(nil, mkTag(0, tagQuit), nil)); !errors.Is(err, uct.ErrRemoteProtection) {
		t.Fatalf("send on the failed endpoint: %v", err)
	}
	nd.kill(1)
}

// Fields the program set win over the environment, which fills the
// fields left at their zero value; defaults fill the rest.
func TestEnvPrecedence(t *testing.T) {
	env := map[string]string{EnvRndvThresh: "16k", EnvZcopyThresh: "8k", EnvErrMode: "peer", EnvKeepalive: "250ms",
		EnvMatchingMode: "never_suspend", EnvTLS: "rc", EnvRndvScheme: "put", EnvRcacheMax: "1m"}
	set := Config{Transports: builtinTransports()[:1], RndvThresh: 4096, KeepaliveInterval: -1, RndvScheme: RndvPut,
		MatchingMode: MatchingNeverSuspend, RcacheMax: 2 << 20}
	ctx, err := newContext(set, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	c := ctx.Config()
	if len(c.Transports) != 1 || c.Transports[0].Name() != "shm" {
		t.Errorf("UCGO_TLS=rc replaced the program's transports: %v", c.Transports)
	}
	if c.RndvThresh != 4096 || c.KeepaliveInterval != -1 || c.RcacheMax != 2<<20 {
		t.Errorf("environment overrode set fields: rndv %d keepalive %v rcache %d", c.RndvThresh, c.KeepaliveInterval, c.RcacheMax)
	}
	if c.ZcopyThresh != 8<<10 || c.ErrorMode != ErrorModePeer {
		t.Errorf("environment did not fill unset fields: zcopy %d errmode %v", c.ZcopyThresh, c.ErrorMode)
	}
	if c.ShortThresh != 0 || c.AMReassemblyMax != 0 || c.ThreadSafe {
		t.Errorf("unset fields without a variable changed: short %d reassembly %d thread-safe %v", c.ShortThresh, c.AMReassemblyMax, c.ThreadSafe)
	}
	ctx2, err := newContext(Config{Transports: builtinTransports()[:1]}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer ctx2.Close()
	if d := ctx2.Config(); d.ZcopyThresh != 4096 || d.KeepaliveInterval != defaultKeepalive {
		t.Errorf("defaults: zcopy %d keepalive %v", d.ZcopyThresh, d.KeepaliveInterval)
	}
}

func TestEnvOverrides(t *testing.T) {
	env := map[string]string{EnvRndvThresh: "16k", EnvErrMode: "peer", EnvKeepalive: "250ms", EnvSilentPeers: "1",
		EnvMatchingMode: "never_suspend", EnvTLS: "shm", EnvRndvScheme: "put", EnvThreadSafe: "true"}
	ctx, err := newContext(Config{}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	c := ctx.Config()
	if c.RndvThresh != 16<<10 || c.ErrorMode != ErrorModePeer || c.KeepaliveInterval.Milliseconds() != 250 || !c.DetectSilentPeers ||
		c.MatchingMode != MatchingNeverSuspend || c.RndvScheme != RndvPut || !c.ThreadSafe || len(c.Transports) != 1 {
		t.Fatalf("config %+v", c)
	}
	// A bad value is an error even when the program set its field.
	set := Config{ErrorMode: ErrorModePeer, RndvThresh: 1 << 20, KeepaliveInterval: time.Second, DetectSilentPeers: true,
		Transports: builtinTransports()[:1]}
	for k, v := range map[string]string{EnvTLS: "nosuch", EnvErrMode: "x", EnvRndvThresh: "abc", EnvKeepalive: "soon", EnvSilentPeers: "maybe"} {
		if _, err := newContext(set, func(key string) string {
			if key == k {
				return v
			}
			return ""
		}); !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("%s=%s over a set field: %v", k, v, err)
		}
		_, err := newContext(Config{}, func(key string) string {
			if key == k {
				return v
			}
			return ""
		})
		if !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
