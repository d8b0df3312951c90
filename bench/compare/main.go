package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	Tests      []*testMap
	Transports []*transportMap
	Sizes      []int
	Iters      int
	Warmup     int
	MaxBytes   int
	Window     int
	Repeats    int
	Replot     string
	Out        string
	Perftest   string
	UCX        string
	Install    bool
	Timeout    time.Duration
	RT         bool
}

const (
	defaultTests = "am_lat,am_bw,put_lat,put_bw,tag_lat,tag_bw"
	defaultSizes = "8,32,128,512,2k,8k,32k,128k,512k,1m"
	// minIters bounds -max-bytes from below.
	minIters = 100
)

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./bench/compare [options]\n\noptions:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\ntests: "+testMapNames())
	}
	tests := fs.String("t", defaultTests, "tests, comma-separated (names of bench/perftest)")
	trs := fs.String("x", "shm,rc,rc-lo", "transports, comma-separated: shm, rc (ours between two network namespaces as root), rc-lo (ours over lo)")
	sizes := fs.String("s", defaultSizes, "message sizes, comma-separated (k, m suffixes)")
	fs.IntVar(&c.Iters, "n", 10000, "measured iterations per size (see -max-bytes)")
	fs.IntVar(&c.Warmup, "w", 1000, "warm-up iterations per size (at most a tenth of the measured ones)")
	maxBytes := fs.String("max-bytes", "256m", fmt.Sprintf("cap iterations so that iterations*size stays below this (not below %d iterations)", minIters))
	fs.IntVar(&c.Repeats, "r", 5, "pairs of back-to-back runs of the two tools per test and size; the table shows the median of each tool's figures and of the pairs' ratios")
	fs.IntVar(&c.Window, "O", 16, "outstanding operations of bandwidth tests (both tools)")
	fs.StringVar(&c.Out, "o", "compare-out", "output folder: table.md, results.json, results.csv, one SVG per transport")
	fs.StringVar(&c.Perftest, "perftest", "", "our perftest binary (default: go build ./bench/perftest)")
	fs.StringVar(&c.UCX, "ucx", "ucx_perftest", "ucx_perftest binary")
	noInstall := fs.Bool("no-install", false, "do not install ucx-utils with apt-get when ucx_perftest is missing")
	fs.StringVar(&c.Replot, "replot", "", "do not measure: print the table and write the outputs again from this results.json")
	fs.DurationVar(&c.Timeout, "timeout", 3*time.Minute, "time limit of one run of either tool")
	fs.BoolVar(&c.RT, "rt", false, "run both tools' processes at real-time priority (SCHED_RR 1, with chrt) for steady figures on a loaded host; needs root or CAP_SYS_NICE")
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
	c.Install = !*noInstall
	for _, n := range splitList(*tests) {
		t := findTestMap(n)
		if t == nil {
			return bad("-t: unknown test %q (known: %s)", n, testMapNames())
		}
		c.Tests = append(c.Tests, t)
	}
	for _, n := range splitList(*trs) {
		tr := findTransportMap(n)
		if tr == nil {
			return bad("-x: unknown transport %q (known: shm, rc, rc-lo)", n)
		}
		c.Transports = append(c.Transports, tr)
	}
	if len(c.Tests) == 0 || len(c.Transports) == 0 {
		return bad("-t and -x need at least one name")
	}
	var err error
	if c.Sizes, err = parseSizes(*sizes); err != nil {
		return bad("-s: %v", err)
	}
	mb, err := parseSizes(*maxBytes)
	if err != nil || len(mb) != 1 {
		return bad("-max-bytes: %q is not one size", *maxBytes)
	}
	c.MaxBytes = mb[0]
	if c.Iters < 1 || c.Warmup < 0 || c.Window < 1 || c.Repeats < 1 {
		return bad("-n, -r and -O must be positive, -w not negative")
	}
	if c.Timeout <= 0 {
		return bad("-timeout must be positive")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseSizes parses a comma list of sizes in bytes with optional k or m.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		mult := 1
		switch f[len(f)-1] {
		case 'k', 'K':
			mult, f = 1<<10, f[:len(f)-1]
		case 'm', 'M':
			mult, f = 1<<20, f[:len(f)-1]
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > (1<<30)/mult {
			return nil, fmt.Errorf("size %q is not a number in 1..1g", f)
		}
		out = append(out, n*mult)
	}
	if len(out) == 0 {
		return nil, errors.New("no sizes")
	}
	return out, nil
}

// iterations returns the measured and warm-up iterations of one size.
func (c *config) iterations(size int) (iters, warmup int) {
	iters = c.Iters
	if lim := max(minIters, c.MaxBytes/size); iters > lim {
		iters = lim
	}
	warmup = min(c.Warmup, max(1, iters/10))
	return iters, warmup
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = compare(cfg, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "compare:", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// compare runs every test, transport and size with both tools, prints the
// ratio table and writes the output folder.
func compare(cfg *config, stdout, stderr io.Writer) error {
	if cfg.Replot != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return err
		}
		return replot(cfg, stdout)
	}
	// Checked before anything else, so that -rt fails at once where it
	// cannot work.
	launch, err := newLauncher(cfg.RT)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	// An interrupt ends the run in progress (and, under -rt, the process
	// groups of its tools) rather than leaving the tools behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ucxPath, err := findUCX(cfg.UCX, cfg.Install, stderr)
	if err != nil {
		return err
	}
	pt := cfg.Perftest
	if pt == "" {
		dir, err := os.MkdirTemp("", "ucgo-compare-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if pt, err = buildPerftest(dir); err != nil {
			return err
		}
	}
	ours, err := newOursRunner(pt, cfg.Timeout)
	if err != nil {
		return err
	}
	ours.launch = launch
	ucx := &ucxRunner{path: ucxPath, cpus: [2]int{-1, -1}, timeout: cfg.Timeout, launch: launch}
	if n := runtime.NumCPU(); n > 1 {
		ucx.cpus = [2]int{0, n - 1} // as perftest -l pins its two sides
	}
	res := &results{UCXVersion: ucxVersion(), Repeats: cfg.Repeats, RealTime: launch.rt(), Started: time.Now().UTC()}
	for _, tr := range cfg.Transports {
		for _, t := range cfg.Tests {
			res.Rows = append(res.Rows, compareTest(ctx, cfg, ours, ucx, t, tr, stderr)...)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	res.Finished = time.Now().UTC()
	return res.write(cfg, stdout)
}

// compareTest runs one test over one transport at every size.
func compareTest(ctx context.Context, cfg *config, ours *oursRunner, ucx *ucxRunner, t *testMap, tr *transportMap, log io.Writer) []row {
	sizes := cfg.Sizes
	if t.fixed > 0 {
		sizes = []int{t.fixed}
	}
	oursMissing := ours.available(t, tr)
	if oursMissing != "" {
		fmt.Fprintf(log, "compare: %-4s %-8s skipped: %s\n", tr.name, t.name, oursMissing)
	}
	layout := 0 // index into t.layouts; sizes grow, so the layout only moves on
	var rows []row
	for _, size := range sizes {
		if ctx.Err() != nil {
			break
		}
		iters, warmup := cfg.iterations(size)
		r := row{Test: t.name, Transport: tr.name, Size: size, Iterations: iters, Warmup: warmup, UCXTest: t.ucx}
		if oursMissing != "" {
			// Nothing to compare with: UCX is not run either.
			r.OursErr, r.UCXErr = oursMissing, "not run (ucgo cannot run this test)"
			rows = append(rows, r)
			continue
		}
		// Each repeat is a pair: both tools back to back, the first of the
		// pair alternating, so that a busy moment of the machine falls on
		// both tools and the pair's ratio is taken within one host state.
		var oursRuns, ucxRuns []figures
		var oursErrs, ucxErrs []string
		// When a tool says the size is beyond its limit, neither is run
		// again at this size; other failures (a timeout on a loaded
		// machine) do not stop the repeats.
		oursLimit, ucxLimit := false, false
		runOurs := func() *figures {
			f, err := ours.run(ctx, t, tr, size, iters, warmup, cfg.Window)
			if err != nil {
				oursErrs = append(oursErrs, err.Error())
				oursLimit = limitError(err.Error())
				return nil
			}
			oursRuns = append(oursRuns, f)
			return &f
		}
		runUCX := func() *figures {
			var f figures
			var err error
			switch {
			case !t.uct:
				f, err = ucx.run(ctx, t, tr, "", size, iters, warmup, cfg.Window)
			case r.UCXLayout != "":
				f, err = ucx.run(ctx, t, tr, r.UCXLayout, size, iters, warmup, cfg.Window)
			default:
				// Find the layout: the first that UCX accepts at this size.
				for ; ; layout++ {
					f, err = ucx.run(ctx, t, tr, t.layouts[layout], size, iters, warmup, cfg.Window)
					var ue *ucxError
					if errors.As(err, &ue) && ue.unsupported() && layout+1 < len(t.layouts) {
						continue
					}
					r.UCXLayout = t.layouts[layout]
					break
				}
			}
			if err != nil {
				ucxErrs = append(ucxErrs, err.Error())
				var ue *ucxError
				ucxLimit = errors.As(err, &ue) && ue.unsupported()
				return nil
			}
			ucxRuns = append(ucxRuns, f)
			return &f
		}
		for rep := 0; rep < cfg.Repeats && !oursLimit && !ucxLimit && ctx.Err() == nil; rep++ {
			var o, u *figures
			if rep%2 == 0 {
				o = runOurs()
				if !oursLimit {
					u = runUCX()
				}
			} else {
				u = runUCX()
				if !ucxLimit {
					o = runOurs()
				}
			}
			if o != nil && u != nil {
				r.Pairs = append(r.Pairs, newPair(t, size, *o, *u))
			}
		}
		r.flagStateChange(t)
		r.Ours, r.OursErr = summarize(oursRuns, oursErrs)
		r.UCX, r.UCXErr = summarize(ucxRuns, ucxErrs)
		if cfg.Repeats > 1 {
			r.OursRuns, r.UCXRuns = oursRuns, ucxRuns
		}
		fmt.Fprintf(log, "compare: %-4s %-8s %8s  ucgo %s  UCX %s\n", tr.name, t.name, sizeName(size), r.brief(r.Ours, r.OursErr, t), r.brief(r.UCX, r.UCXErr, t))
		rows = append(rows, r)
	}
	return rows
}

// replot reads a results.json of an earlier run and writes the outputs
// again, for the transports it has.
func replot(cfg *config, stdout io.Writer) error {
	b, err := os.ReadFile(cfg.Replot)
	if err != nil {
		return err
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", cfg.Replot, err)
	}
	cfg.Transports = nil
	for _, r := range res.Rows {
		tr := findTransportMap(r.Transport)
		if tr != nil && !slices.Contains(cfg.Transports, tr) {
			cfg.Transports = append(cfg.Transports, tr)
		}
	}
	return res.write(cfg, stdout)
}

// summarize returns the median of each figure over the runs that
// succeeded, and the errors of the others.
func summarize(runs []figures, errs []string) (*figures, string) {
	e := ""
	if len(errs) > 0 {
		e = errs[0]
		if len(runs) > 0 {
			e = fmt.Sprintf("%d of %d runs failed: %s", len(errs), len(errs)+len(runs), e)
		}
	}
	if len(runs) == 0 {
		return nil, e
	}
	med := func(get func(*figures) float64) float64 {
		v := make([]float64, len(runs))
		for i := range runs {
			v[i] = get(&runs[i])
		}
		return median(v)
	}
	return &figures{
		Iterations: runs[0].Iterations,
		LatMedian:  med(func(f *figures) float64 { return f.LatMedian }),
		LatAvg:     med(func(f *figures) float64 { return f.LatAvg }),
		LatOverall: med(func(f *figures) float64 { return f.LatOverall }),
		BWAvg:      med(func(f *figures) float64 { return f.BWAvg }),
		BW:         med(func(f *figures) float64 { return f.BW }),
		RateAvg:    med(func(f *figures) float64 { return f.RateAvg }),
		Rate:       med(func(f *figures) float64 { return f.Rate }),
	}, e
}

// sizeName prints a size as 8, 4k, 1m.
func sizeName(n int) string { return plot.SizeName(n) }

func (r *row) brief(f *figures, e string, t *testMap) string {
	switch {
	case f == nil:
		return "n/a (" + firstLine(e) + ")"
	case t.lat:
		return fmt.Sprintf("%.3f us", f.LatMedian)
	default:
		return fmt.Sprintf("%.1f MB/s", f.BW)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// outputPath is the path of one output file.
func (c *config) outputPath(name string) string { return filepath.Join(c.Out, name) }
