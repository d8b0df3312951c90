package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

// config is the parsed command line. The fields that both sides of a run
// must agree on travel to the server in a params message.
type config struct {
	Test      string
	Transport string
	Sizes     []int
	Iters     int
	Warmup    int
	Window    int    // outstanding operations of bandwidth tests
	ErrMode   string // none, peer, failover
	Wildcard  bool   // -C: wildcard receives (tag tests)
	Wait      string // poll, sleep
	Port      int
	Device    string // -d: the transport's device (rc: netdev)
	Local     bool
	Format    report.Format
	Host      string // client mode when set
	CPU       int    // pin to this CPU; -1: no pinning
	List      bool
	Fault     string // --fault KIND@T[+D]: a failover run (failover.go)
	Out       string // --out: where a failover run writes its timeline
	CPUProf   string // -cpuprofile: where the run's CPU profile goes (cpuprofile.go)
	where     string // placement of -l's two sides, for the table title
}

func (c *config) params() params {
	return params{Test: c.Test, Transport: c.Transport, Sizes: c.Sizes, Iters: c.Iters, Warmup: c.Warmup,
		Window: c.Window, ErrMode: c.ErrMode, Wildcard: c.Wildcard, Wait: c.Wait}
}

func (c *config) setParams(p params) {
	c.Test, c.Transport, c.Sizes, c.Iters, c.Warmup = p.Test, p.Transport, p.Sizes, p.Iters, p.Warmup
	c.Window, c.ErrMode, c.Wildcard, c.Wait = p.Window, p.ErrMode, p.Wildcard, p.Wait
}

const usageHead = `usage: perftest [options]          server: wait for a client on -p
       perftest [options] HOST     client: run the test against HOST
       perftest -l [options]       run both sides on this host
       mpiexec -n 2 perftest [options]

options:`

// parseFlags parses args (without the program name). Test and transport
// names are checked against the tables; whether they can run here is
// checked later (lookup).
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("perftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usageHead)
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\n"+testList())
	}
	fs.StringVar(&c.Test, "t", "", "test to run (see the list below)")
	fs.StringVar(&c.Transport, "x", "shm", "transport: "+strings.Join(transportNames(), ", "))
	sizes := fs.String("s", "8", "message sizes in bytes, comma-separated (each size is one run)")
	fs.IntVar(&c.Iters, "n", 100000, "measured iterations per size")
	fs.IntVar(&c.Warmup, "w", 10000, "warm-up iterations per size")
	fs.IntVar(&c.Window, "O", 16, "outstanding operations of bandwidth tests")
	fs.StringVar(&c.ErrMode, "e", "none", "error mode: none, peer, failover")
	fs.BoolVar(&c.Wildcard, "C", false, "use wildcard receives (tag tests)")
	fs.StringVar(&c.Wait, "E", "poll", "wait mode: poll (busy progress), sleep (iface Arm/Wait)")
	fs.IntVar(&c.Port, "p", 13337, "TCP port of the server")
	fs.StringVar(&c.Device, "d", "", "device of the transport (rc: netdev; default: the first up non-loopback netdev with IPv4, else lo)")
	fs.BoolVar(&c.Local, "l", false, "local mode: start both sides as two processes on this host")
	fs.IntVar(&c.CPU, "c", -1, "pin to this CPU (-l pins the two sides apart by default)")
	csv := fs.Bool("csv", false, "print CSV")
	js := fs.Bool("json", false, "print one JSON object per size and line")
	fs.BoolVar(&c.List, "list", false, "list tests and transports and exit")
	fs.StringVar(&c.Fault, "fault", "", "with -l -e failover: stream across a fault on rail 0, KIND@TIME[+LENGTH] (linkdown, blackhole, flap; e.g. linkdown@2s)")
	fs.StringVar(&c.Out, "out", "failover-out", "directory of a failover run's timeline (failover.json, failover.svg)")
	fs.StringVar(&c.CPUProf, "cpuprofile", "", "write a CPU profile of the run to this file (-l: the server's to FILE.server)")
	rest := args
	var hosts []string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		hosts = append(hosts, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if c.List {
		return c, nil
	}
	bad := func(format string, a ...any) (*config, error) {
		return nil, fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
	}
	switch len(hosts) {
	case 0:
	case 1:
		c.Host = hosts[0]
	default:
		return bad("more than one host: %q", hosts)
	}
	if *csv && *js {
		return bad("--csv and --json exclude each other")
	}
	switch {
	case *csv:
		c.Format = report.CSV
	case *js:
		c.Format = report.JSON
	}
	if c.Local && c.Host != "" {
		return bad("-l runs both sides; it takes no host")
	}
	var err error
	if c.Sizes, err = parseSizes(*sizes); err != nil {
		return bad("-s: %v", err)
	}
	if c.Iters < 1 {
		return bad("-n must be at least 1")
	}
	if c.Warmup < 0 {
		return bad("-w must not be negative")
	}
	if c.Window < 1 || c.Window > 1024 {
		return bad("-O must be in 1..1024")
	}
	if c.Port < 0 || c.Port > 65535 {
		return bad("-p: no port %d", c.Port)
	}
	switch c.ErrMode {
	case "none", "peer", "failover":
	default:
		return bad("-e: error mode %q, want none, peer or failover", c.ErrMode)
	}
	switch c.Wait {
	case "poll", "sleep":
	default:
		return bad("-E: wait mode %q, want poll or sleep", c.Wait)
	}
	if findTransport(c.Transport) == nil {
		return bad("-x: unknown transport %q (known: %s)", c.Transport, strings.Join(transportNames(), ", "))
	}
	if c.Fault != "" {
		if c.ErrMode != "failover" || !c.Local {
			return bad("--fault needs -l and -e failover")
		}
		if _, err := parseFault(c.Fault); err != nil {
			return bad("%v", err)
		}
	}
	// The server learns the test from its client.
	if c.Test == "" && (c.Host != "" || c.Local) && c.Fault == "" {
		return bad("-t: which test? (-t am_lat; -list shows all)")
	}
	if c.Test != "" && findTest(c.Test) == nil {
		return bad("-t: unknown test %q (-list shows all)", c.Test)
	}
	return c, nil
}

const maxSize = 1 << 30

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"), strings.HasSuffix(f, "K"):
			mult, f = 1<<10, f[:len(f)-1]
		case strings.HasSuffix(f, "m"), strings.HasSuffix(f, "M"):
			mult, f = 1<<20, f[:len(f)-1]
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("size %q is not a number", f)
		}
		if n < 1 || n > maxSize/mult {
			return nil, fmt.Errorf("size %d%s out of range 1..%d", n, map[int]string{1: "", 1 << 10: "k", 1 << 20: "m"}[mult], maxSize)
		}
		out = append(out, n*mult)
	}
	if len(out) > maxSizes {
		return nil, fmt.Errorf("more than %d sizes", maxSizes)
	}
	return out, nil
}
