package ucp

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/testproc"
)

// Cross-process tests re-execute the test binary (internal/testproc): a
// child playing a role of childRoles opens a worker, prints its address, reads every
// rank's address from stdin, connects to all, prints connectedLine and
// runs its role.

// connectedLine is what a child prints once it connected to every rank.
const connectedLine = "connected"

const (
	rankEnv = "UCGO_UCP_RANK"
	sizeEnv = "UCGO_UCP_NPROCS"
	// rankEnvPrefix + rank: environment of one rank (K=V;K=V)
	rankEnvPrefix = "UCGO_UCP_ENV_"
)

// Tags carry the sender's rank in bits 32-47.
const srcMask = uint64(0xffff) << 32

func mkTag(rank int, t uint32) uint64 { return uint64(rank)<<32 | uint64(t) }

// noSrcMask as Config.SourceTagMask makes world give rank 0 no mask.
const noSrcMask = ^uint64(0)

const anySrc = ^srcMask // mask for a wildcard-source receive of one tag
const exact = ^uint64(0)

// node is one process of a test world.
type node struct {
	t     testing.TB // nil in children
	rank  int
	n     int
	ctx   *Context
	w     *Worker
	eps   []*Endpoint
	procs []*exec.Cmd // parent: children by rank (index 0 unused)
	kids  []*testproc.Child
	errs  chan epErr
	star  *netns.Star // parent: rank r's namespace is star.NS[r], or nil
}

type epErr struct {
	rank int
	err  error
}

// TestMain registers every role of childRoles (filled by the test files'
// init functions) with testproc.
func TestMain(m *testing.M) {
	for role := range childRoles {
		testproc.Register(role, func() error {
			if err := runChild(role); err != nil {
				return fmt.Errorf("rank %s: %w", os.Getenv(rankEnv), err)
			}
			return nil
		})
	}
	testproc.Main(m)
}

func testCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 60*time.Second)
}

func runChild(role string) error {
	rank, _ := strconv.Atoi(os.Getenv(rankEnv))
	n, _ := strconv.Atoi(os.Getenv(sizeEnv))
	fn := childRoles[role]
	if fn == nil {
		return fmt.Errorf("no role %q", role)
	}
	// UCGO_UCP_ENV_<rank>=K=V;K=V sets variables for one rank only
	for _, kv := range strings.Split(os.Getenv(rankEnvPrefix+strconv.Itoa(rank)), ";") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			os.Setenv(k, v)
		}
	}
	ctx, err := NewContext(Config{SourceTagMask: srcMask})
	if err != nil {
		return err
	}
	w, err := ctx.NewWorker()
	if err != nil {
		return err
	}
	fmt.Printf("%x\n", w.Address())
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return err
	}
	nd := &node{rank: rank, n: n, ctx: ctx, w: w, errs: make(chan epErr, 16)}
	if err := nd.connectAll(strings.Fields(line)); err != nil {
		return err
	}
	fmt.Println(connectedLine)
	if err := fn(nd); err != nil {
		return err
	}
	return w.Close()
}

func (nd *node) connectAll(addrs []string) error {
	nd.eps = make([]*Endpoint, len(addrs))
	for r, a := range addrs {
		if r == nd.rank {
			continue
		}
		b, err := hex.DecodeString(a)
		if err != nil {
			return err
		}
		r := r
		ep, err := nd.w.Connect(b, EPParams{SourceTag: mkTag(r, 0), Timeout: testEPParams(), ErrorHandler: func(ep *Endpoint, err error) {
			select {
			case nd.errs <- epErr{r, err}:
			default:
			}
		}})
		if err != nil {
			return err
		}
		nd.eps[r] = ep
	}
	return nil
}

// world starts n-1 children running role (with env added) and returns rank 0.
func world(t testing.TB, n int, role string, cfg Config, env ...string) *node {
	t.Helper()
	return worldIn(t, nil, n, role, cfg, env...)
}

// worldIn is world with rank r in star.NS[r] when star is not nil: rank
// 0's worker is made and its endpoints connected inside its namespace (the
// rc device's socket and connection manager live there), the children are
// started in theirs.
func worldIn(t testing.TB, star *netns.Star, n int, role string, cfg Config, env ...string) *node {
	t.Helper()
	switch cfg.SourceTagMask {
	case 0:
		cfg.SourceTagMask = srcMask
	case noSrcMask:
		cfg.SourceTagMask = 0 // rank 0 does not know where tags carry the rank
	}
	in := func(r int, fn func() error) error {
		if star == nil {
			return fn()
		}
		return star.NS[r].Do(fn)
	}
	nd := &node{t: t, n: n, procs: make([]*exec.Cmd, n), kids: make([]*testproc.Child, n), errs: make(chan epErr, 16), star: star}
	if err := in(0, func() error { return nd.open(cfg) }); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addrs := []string{hex.EncodeToString(nd.w.Address())}
	var stdins []io.Writer
	var outs []*bufio.Reader
	for r := 1; r < n; r++ {
		cmd := exec.Command(self, testproc.Args...)
		if star != nil {
			cmd = star.NS[r].Command(self, testproc.Args...)
		}
		inW, br, a := nd.startChild(cmd, role, r, env)
		addrs = append(addrs, a)
		stdins = append(stdins, inW)
		outs = append(outs, br)
	}
	for _, in := range stdins {
		fmt.Fprintln(in, strings.Join(addrs, " "))
	}
	// Connect (the rc connection manager dials) before the first
	// Progress: the children's wireups then find our endpoints and need
	// no connection back from outside the namespace.
	if err := in(0, func() error { return nd.connectAll(addrs) }); err != nil {
		t.Fatal(err)
	}
	// Every child connected to every rank before the test starts, so a
	// test that kills one child does not make another fail to connect.
	for r := range outs {
		var line string
		if err := nd.kids[r+1].Scan(childWait, &line); err != nil || line != connectedLine {
			t.Fatalf("rank %d did not connect to every rank: %q, %v", r+1, line, err)
		}
	}
	return nd
}

// open makes nd's context and worker from cfg (rank 0 of a world) and
// closes them at cleanup.
func (nd *node) open(cfg Config) error {
	ctx, err := newContext(cfg, func(string) string { return "" })
	if err != nil {
		return err
	}
	w, err := ctx.NewWorker()
	if err != nil {
		ctx.Close()
		return err
	}
	nd.ctx, nd.w = ctx, w
	nd.t.Cleanup(func() {
		nd.w.Close()
		nd.ctx.Close()
	})
	return nil
}

// startChild starts cmd, this test binary (maybe inside a namespace), as
// rank r of nd's world running role with env added, makes it nd.procs[r],
// kills it at cleanup, and returns its stdin, its stdout and the worker
// address it printed first.
func (nd *node) startChild(cmd *exec.Cmd, role string, r int, env []string) (io.WriteCloser, *bufio.Reader, string) {
	t := nd.t
	t.Helper()
	env = append([]string{rankEnv + "=" + strconv.Itoa(r), sizeEnv + "=" + strconv.Itoa(nd.n)}, env...)
	c := testproc.Start(t, testproc.Spec{Role: role, Env: env, Cmd: cmd})
	nd.procs[r] = c.Cmd
	if r < len(nd.kids) {
		nd.kids[r] = c
	}
	var a string
	if err := c.Scan(childWait, &a); err != nil {
		t.Fatalf("reading rank %d address: %v", r, err)
	}
	return c.Stdin, c.Stdout, a
}

// childWait bounds each wait for a line from a child.
const childWait = 60 * time.Second

// wait waits for r in a child or the parent.
func (nd *node) wait(r *Request) error {
	ctx, cancel := testCtx()
	defer cancel()
	err := r.Wait(ctx)
	if err != nil && ctx.Err() != nil && nd.t != nil {
		nd.t.Fatalf("request timed out: %v", err)
	}
	return err
}

// must fails the test (parent) or panics (child) on err.
func (nd *node) must(err error) {
	if err == nil {
		return
	}
	if nd.t != nil {
		nd.t.Helper()
		nd.t.Fatal(err)
	}
	panic(err)
}

// kill SIGKILLs rank r.
func (nd *node) kill(r int) {
	nd.procs[r].Process.Kill()
}

// exitOK waits for rank r to exit with status 0.
func (nd *node) exitOK(r int) {
	nd.t.Helper()
	done := make(chan error, 1)
	go func() { done <- nd.procs[r].Wait() }()
	select {
	case err := <-done:
		if err != nil {
			nd.t.Fatalf("rank %d: %v", r, err)
		}
	case <-time.After(60 * time.Second):
		nd.t.Fatalf("rank %d did not exit", r)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

var childRoles = map[string]func(*node) error{}
