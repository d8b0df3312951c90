package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/internal/tsc"
	"github.com/ucgo/ucgo/ucp"
)

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type config struct {
	X       string
	Steps   []int
	Procs   int
	Iters   int
	Warmup  int
	Out     string
	JSON    bool
	Timeout time.Duration
	Child   int // >0: child mode with this many workers
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.X, "x", "shm", "transport: shm or rc (over lo)")
	steps := fs.String("n", "1,4,16,64,256", "numbers of connected peers to measure at, increasing")
	fs.IntVar(&c.Procs, "procs", 4, "child processes that host the peer workers")
	fs.IntVar(&c.Iters, "iters", 2000, "tag ping-pongs per step")
	fs.IntVar(&c.Warmup, "w", 200, "warm-up ping-pongs per step")
	fs.StringVar(&c.Out, "o", "", "write results.json and scale.svg into this folder")
	fs.BoolVar(&c.JSON, "json", false, "print the results as JSON")
	fs.DurationVar(&c.Timeout, "timeout", 2*time.Minute, "limit of one step")
	fs.IntVar(&c.Child, "child", 0, "internal: serve this many peer workers")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	bad := func(format string, a ...any) (*config, error) {
		return nil, fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments %q", fs.Args())
	}
	if _, err := transports(c.X); err != nil {
		return nil, err
	}
	for _, f := range strings.Split(*steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return bad("-n: %q is not a number of peers in 1..4096", f)
		}
		if len(c.Steps) > 0 && n <= c.Steps[len(c.Steps)-1] {
			return bad("-n: steps must increase")
		}
		c.Steps = append(c.Steps, n)
	}
	if c.Procs < 1 || c.Iters < 1 || c.Warmup < 0 || c.Timeout <= 0 {
		return bad("-procs, -iters and -timeout must be positive, -w not negative")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && cfg.Child > 0 {
		return childMain(cfg.X, cfg.Child)
	}
	var res *results
	if err == nil {
		res, err = measure(cfg, stderr)
	}
	if err == nil {
		err = res.write(cfg, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "scale:", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// step is what one number of connected peers cost.
type step struct {
	Peers     int     `json:"peers"`
	ConnectMs float64 `json:"connect_ms"` // to connect this step's new peers
	usage
	LatMedianUs float64 `json:"lat_median_us"` // tag, 8 B, one way, to the first peer
	LatP99Us    float64 `json:"lat_p99_us"`
}

type results struct {
	Transport string    `json:"transport"`
	Procs     int       `json:"procs"`
	Iters     int       `json:"iters"`
	Clock     string    `json:"clock"`
	Base      usage     `json:"base"` // before the first endpoint
	Steps     []step    `json:"steps"`
	Started   time.Time `json:"started"`
}

// children are the processes hosting the peers, with the peers'
// addresses in connection order (spread over the processes).
type children struct {
	cmds  []*exec.Cmd
	ins   []io.WriteCloser
	addrs [][]byte
}

func startChildren(cfg *config, n int, log io.Writer) (*children, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	procs := min(cfg.Procs, n)
	per := (n + procs - 1) / procs
	ch := &children{}
	lists := make([][][]byte, procs)
	for i := 0; i < procs; i++ {
		cmd := exec.Command(exe, "-child", strconv.Itoa(per), "-x", cfg.X)
		cmd.Stderr = log
		in, err := cmd.StdinPipe()
		if err != nil {
			return ch, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return ch, err
		}
		if err := cmd.Start(); err != nil {
			return ch, err
		}
		ch.cmds, ch.ins = append(ch.cmds, cmd), append(ch.ins, in)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() && sc.Text() != "ready" {
			h, ok := strings.CutPrefix(sc.Text(), "addr ")
			a, err := hex.DecodeString(h)
			if !ok || err != nil {
				return ch, fmt.Errorf("child %d printed %q", i, sc.Text())
			}
			lists[i] = append(lists[i], a)
		}
		if len(lists[i]) != per {
			return ch, fmt.Errorf("child %d gave %d addresses of %d (%v)", i, len(lists[i]), per, sc.Err())
		}
	}
	for j := 0; j < per; j++ {
		for i := range lists {
			ch.addrs = append(ch.addrs, lists[i][j])
		}
	}
	return ch, nil
}

// lockedWriter serializes writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// stop closes the children's standard input, which ends them, and waits.
func (ch *children) stop() error {
	var err error
	for _, in := range ch.ins {
		in.Close()
	}
	for _, c := range ch.cmds {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case e := <-done:
			err = multierr.Append(err, e)
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			err = multierr.Append(err, fmt.Errorf("child %d did not end within 30s", c.Process.Pid))
			<-done
		}
	}
	return err
}

func measure(cfg *config, log io.Writer) (res *results, err error) {
	comps, err := transports(cfg.X)
	if err != nil {
		return nil, err
	}
	maxN := cfg.Steps[len(cfg.Steps)-1]
	log = &lockedWriter{w: log} // the children's stderr copiers write to it too
	ch, err := startChildren(cfg, maxN, log)
	defer func() { err = multierr.Append(err, ch.stop()) }()
	if err != nil {
		return nil, err
	}
	c, err := ucp.NewContext(ucp.Config{Transports: comps})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	w, err := c.NewWorker()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	acks := 0
	w.SetAMHandler(amAck, func(*ucp.AMMessage) { acks++ })
	release := &ucp.Params{Callback: func(r *ucp.Request) { r.Release() }}

	res = &results{Transport: cfg.X, Procs: min(cfg.Procs, maxN), Iters: cfg.Iters, Clock: tsc.Calibrate().String(), Started: time.Now().UTC()}
	runtime.GC()
	debug.FreeOSMemory()
	if res.Base, err = readUsage(); err != nil {
		return nil, err
	}
	var eps []*ucp.Endpoint
	lat := newLatency(cfg.Warmup + cfg.Iters)
	for _, n := range cfg.Steps {
		t0 := time.Now()
		for i := len(eps); i < n; i++ {
			ep, err := w.Connect(ch.addrs[i], ucp.EPParams{})
			if err != nil {
				return nil, fmt.Errorf("connect peer %d: %w", i, err)
			}
			eps = append(eps, ep)
			ep.AMSend(amHello, nil, nil, release)
		}
		if err := progressUntil(w, func() bool { return acks >= n }, t0.Add(cfg.Timeout)); err != nil {
			return nil, fmt.Errorf("%d peers: %d answered: %w", n, acks, err)
		}
		s := step{Peers: n, ConnectMs: float64(time.Since(t0).Microseconds()) / 1000}
		runtime.GC()
		debug.FreeOSMemory()
		if s.usage, err = readUsage(); err != nil {
			return nil, err
		}
		if s.LatMedianUs, s.LatP99Us, err = lat.run(w, eps[0], cfg.Warmup, cfg.Iters, time.Now().Add(cfg.Timeout)); err != nil {
			return nil, fmt.Errorf("%d peers: ping-pong: %w", n, err)
		}
		res.Steps = append(res.Steps, s)
		fmt.Fprintf(log, "scale: %s %4d peers: connect %.1f ms, rss %.1f MiB, %d segments, %d fds, tag latency %.3f us\n",
			cfg.X, n, s.ConnectMs, float64(s.RSS)/(1<<20), s.Segments, s.FDs, s.LatMedianUs)
	}
	return res, nil
}

// progressUntil progresses w until done or the deadline.
func progressUntil(w *ucp.Worker, done func() bool, deadline time.Time) error {
	for i := 0; !done(); i++ {
		w.Progress()
		if i%4096 == 0 && time.Now().After(deadline) {
			return errors.New("timed out")
		}
	}
	return nil
}

// latency times 8-byte tag ping-pongs.
type latency struct {
	buf     [8]byte
	samples []time.Duration
}

func newLatency(n int) *latency { return &latency{samples: make([]time.Duration, 0, n)} }

// run returns the median and 99th percentile of the one-way latency, in
// microseconds.
func (l *latency) run(w *ucp.Worker, ep *ucp.Endpoint, warmup, iters int, deadline time.Time) (med, p99 float64, err error) {
	conv := tsc.NewConverter()
	l.samples = l.samples[:0]
	wait := func(r *ucp.Request) error {
		err := progressUntil(w, r.Done, deadline)
		if err == nil {
			err = r.Err()
		}
		r.Release()
		return err
	}
	for i := 0; i < warmup+iters; i++ {
		t0 := tsc.Now()
		rr := w.TagRecv(l.buf[:], tagPong, ^uint64(0), nil)
		if err := wait(ep.TagSend(l.buf[:], tagPing, nil)); err != nil {
			return 0, 0, err
		}
		if err := wait(rr); err != nil {
			return 0, 0, err
		}
		if i >= warmup {
			l.samples = append(l.samples, conv.Duration(tsc.Now()-t0)/2)
		}
	}
	slices.Sort(l.samples)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	return us(l.samples[len(l.samples)/2]), us(l.samples[len(l.samples)*99/100]), nil
}

// write prints the table (or JSON) and writes the output folder.
func (res *results) write(cfg *config, stdout io.Writer) error {
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if cfg.JSON {
		_, err = stdout.Write(append(js, '\n'))
	} else {
		_, err = io.WriteString(stdout, res.table())
	}
	if err != nil || cfg.Out == "" {
		return err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(cfg.Out, "scale.svg"))
	if err != nil {
		return err
	}
	return multierr.Append(res.svg(f), f.Close())
}
