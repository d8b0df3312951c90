package ucp

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// rc lanes between two network namespaces joined by a veth pair: this
// process works in namespace A, the child (the test binary re-executed)
// runs in B. Both use rc only (shm would be chosen otherwise: they share
// the host). Needs root; skipped otherwise.

// epTimeoutEnv sets the transport timeout of a test world's endpoints (a
// Go duration; both processes read it). The rc tests and benchmarks set
// 30 s: the default (3 s: retries every ~200 ms) fails rendezvous
// transfers with "retry counter exceeded" when the machine is loaded.
const epTimeoutEnv = "UCGO_UCP_EP_TIMEOUT"

// testEPParams returns the EPParams.Timeout of the tests' endpoints.
func testEPParams() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(epTimeoutEnv))
	return d
}

// netnsWorld is world for two ranks over rc across a namespace pair.
func netnsWorld(t testing.TB, role string, cfg Config, env ...string) *node {
	t.Helper()
	t.Setenv(epTimeoutEnv, "30s")
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*netns.NS{pair.A, pair.B} {
		if err := waitLinkRunning(ns, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	cfg.SourceTagMask = srcMask
	cfg.Transports = []uct.Component{rc.New(rc.Config{})}
	nd := &node{t: t, n: 2, procs: make([]*exec.Cmd, 2), errs: make(chan epErr, 16)}
	// The rc device's socket and the connection manager's listener are
	// made inside A, so they live there.
	if err := pair.A.Do(func() error { return nd.open(cfg) }); err != nil {
		t.Fatalf("worker in %s: %v", pair.A.Name(), err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	inW, _, a := nd.startChild(pair.B.Command(self, "-test.run=^$"), role, 1, append([]string{EnvTLS + "=rc"}, env...))
	addrs := []string{hex.EncodeToString(nd.w.Address()), a}
	fmt.Fprintln(inW, strings.Join(addrs, " "))
	// Connect (the rc connection manager dials) from inside A, before the
	// first Progress: the child's wireup then finds our endpoint and needs
	// no connection back from this goroutine.
	if err := pair.A.Do(func() error { return nd.connectAll(addrs) }); err != nil {
		t.Fatalf("connect from %s: %v", pair.A.Name(), err)
	}
	if tr := nd.eps[1].lanes[0].attr.Transport; len(nd.eps[1].lanes) != 1 || tr != "rc" {
		t.Fatalf("lanes %d, first %s; want one rc lane", len(nd.eps[1].lanes), tr)
	}
	return nd
}

// waitLinkRunning waits until the namespace's veth end is up and running
// (the rc device reports its port down before that).
func waitLinkRunning(ns *netns.NS, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var flags net.Flags
		err := ns.Do(func() error {
			ifi, err := net.InterfaceByIndex(ns.Index())
			if err == nil {
				flags = ifi.Flags
			}
			return err
		})
		if err != nil {
			return err
		}
		if flags&(net.FlagUp|net.FlagRunning) == net.FlagUp|net.FlagRunning {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s in %s not running after %v", ns.Link(), ns.Name(), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTagRC sends tag messages of every protocol (eager short, bcopy,
// zcopy, rendezvous get and put, up to 4 MiB) over rc between two network
// namespaces and checks every byte of the echo.
func TestTagRC(t *testing.T) {
	for _, c := range []struct {
		mode   ErrorMode
		scheme RndvScheme
	}{{ErrorModeNone, RndvGet}, {ErrorModePeer, RndvPut}} {
		name := c.mode.String() + "/" + map[RndvScheme]string{RndvGet: "get", RndvPut: "put"}[c.scheme]
		t.Run(name, func(t *testing.T) {
			scheme := strings.SplitN(name, "/", 2)[1]
			nd := netnsWorld(t, "echo", Config{ErrorMode: c.mode, RndvScheme: c.scheme},
				EnvErrMode+"="+c.mode.String(), EnvRndvScheme+"="+scheme)
			ep := nd.eps[1]
			sizes := append(append([]int(nil), protoSizes...), ep.shortMax, ep.shortMax+1, ep.bcopyMax, ep.bcopyMax+1)
			for i, n := range sizes {
				out := pattern(n, byte(i))
				in := make([]byte, n+1)
				tag := mkTag(1, uint32(100+i))
				r := nd.w.TagRecv(in, tag, exact, nil)
				s := ep.TagSend(out, mkTag(0, uint32(100+i)), nil)
				nd.must(nd.wait(s))
				nd.must(nd.wait(r))
				checkTagRecv(t, r, tag, ep, in, out)
				r.Release()
				s.Release()
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}

// BenchmarkTagLatencyRC: 8-byte tag ping-pong over rc between two network
// namespaces.
func BenchmarkTagLatencyRC(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			nd := netnsWorld(b, "pong", Config{ErrorMode: m.mode}, EnvErrMode+"="+m.mode.String())
			benchTagLatency(b, nd, 8)
		})
	}
}

// BenchmarkTagBandwidthRC: 1 MiB tag sends over rc between two network
// namespaces.
func BenchmarkTagBandwidthRC(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			nd := netnsWorld(b, "sink", Config{ErrorMode: m.mode}, EnvErrMode+"="+m.mode.String())
			benchTagBandwidth(b, nd, bwSize, bwWindow)
		})
	}
}

// TestForceCloseRCThreadSafe force-closes, fails and purges an rc
// endpoint of a thread-safe worker (Config.ThreadSafe) to a stopped peer
// with RMA, atomics and rendezvous sends in flight. Closing the rc lane
// runs its outstanding completions, whose handlers lock the worker: the
// lane must be closed after the worker's lock is released, or Close never
// returns. Every request completes with uct.ErrCanceled.
func TestForceCloseRCThreadSafe(t *testing.T) {
	for _, how := range []string{"close", "purge"} {
		t.Run(how, func(t *testing.T) {
			cfg := Config{ErrorMode: ErrorModePeer, KeepaliveInterval: -1, ThreadSafe: true}
			nd := netnsWorld(t, "rma", cfg, EnvErrMode+"=peer")
			ep := nd.eps[1]
			keys := recvKeys(t, nd, 1)
			nd.stopChild(1)
			var old uint64
			reqs := []*Request{
				ep.Get(make([]byte, 1<<20), keys[0].addr, keys[0].key, nil),
				ep.Put(pattern(300000, 1), keys[0].addr, keys[0].key, nil),
				ep.AtomicFetch(AtomicAdd, 1, 0, &old, keys[1].addr, keys[1].key, nil),
				ep.TagSend(pattern(100000, 2), mkTag(0, tagX), nil),
				ep.Flush(nil),
			}
			for i, r := range reqs {
				if r.Done() {
					t.Fatalf("request %d completed before the close: %v", i, r.Err())
				}
			}
			// a second goroutine progresses the worker meanwhile
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
						nd.w.Progress()
					}
				}
			}()
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				if how == "purge" {
					nd.w.Purge(ep)
					return
				}
				ep.Close(CloseForce)
			}()
			ctx, cancel := testCtx()
			defer cancel()
			select {
			case <-closed:
			case <-ctx.Done():
				close(stop)
				t.Fatalf("%s of an endpoint with rc operations in flight did not return", how)
			}
			close(stop)
			<-done
			for i, r := range reqs {
				if !r.Done() {
					t.Fatalf("request %d not completed by the %s", i, how)
				}
				failedWith(t, fmt.Sprintf("request %d", i), r.Err(), uct.ErrCanceled)
			}
		})
	}
}
