package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ucgo/ucgo/bench/internal/plot"
	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/fault"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/ucp"
)

// A failover run (-e failover --fault KIND@T[+D]) streams tag messages of
// the first -s size, -O outstanding, from the client to the server across
// a fault injected T after the start on rail 0 of two rails (-l builds two
// namespaces joined by two veth pairs): linkdown (the client's end of
// rail 0 down for D), blackhole (an eBPF program drops every packet of
// rail 0 in both directions for D) or flap (rail 0 down and up every
// 200 ms for D). It counts the messages completed per 10 ms bin, marks
// the fault, the failover event's detection and switch, and writes
// failover.json and failover.svg (plot.WriteTimeline) into --out.

// foServerEnv marks the server process of a failover run.
const foServerEnv = "UCGO_PERFTEST_FAILOVER_SERVER"

const (
	foBin     = 10 * time.Millisecond
	foTag     = 0xf0
	foMaxRun  = 5 * time.Minute
	foFlapGap = 200 * time.Millisecond
)

// faultSpec is a parsed --fault.
type faultSpec struct {
	Kind string        // linkdown, blackhole, flap
	At   time.Duration // from the start of the stream
	For  time.Duration // how long it lasts
}

func (f faultSpec) String() string { return fmt.Sprintf("%s@%v+%v", f.Kind, f.At, f.For) }

// parseFault reads KIND@T[+D]: D defaults to one second.
func parseFault(s string) (faultSpec, error) {
	kind, when, ok := strings.Cut(s, "@")
	if !ok {
		return faultSpec{}, fmt.Errorf("--fault %q: want KIND@TIME, e.g. linkdown@2s", s)
	}
	switch kind {
	case "linkdown", "blackhole", "flap":
	default:
		return faultSpec{}, fmt.Errorf("--fault %q: kind %q, want linkdown, blackhole or flap", s, kind)
	}
	at, dur, hasDur := strings.Cut(when, "+")
	f := faultSpec{Kind: kind, For: time.Second}
	var err error
	if f.At, err = time.ParseDuration(at); err != nil || f.At < 0 || f.At > foMaxRun {
		return faultSpec{}, fmt.Errorf("--fault %q: time %q, want a duration in 0..%v", s, at, foMaxRun)
	}
	if hasDur {
		if f.For, err = time.ParseDuration(dur); err != nil || f.For <= 0 || f.For > foMaxRun {
			return faultSpec{}, fmt.Errorf("--fault %q: length %q, want a positive duration up to %v", s, dur, foMaxRun)
		}
	}
	return f, nil
}

// foTimeline is what failover.json holds. Times are milliseconds from the
// start of the stream; -1 means it did not happen.
type foTimeline struct {
	Transport  string   `json:"transport"`
	Fault      string   `json:"fault"`
	Size       int      `json:"size"`
	Window     int      `json:"window"`
	BinMS      float64  `json:"bin_ms"`
	Bins       []int    `json:"bins"` // messages completed per bin
	Sent       int      `json:"sent"`
	Completed  int      `json:"completed"`
	Failed     int      `json:"failed"`
	FaultMS    float64  `json:"fault_ms"`
	HealMS     float64  `json:"heal_ms"`
	DetectMS   float64  `json:"detected_ms"` // the failover event: fault seen
	SwitchMS   float64  `json:"switched_ms"` // traffic on the new lane
	BackMS     float64  `json:"failed_back_ms"`
	RestoredMS float64  `json:"restored_ms"`    // the failed lane rebuilt
	GapMS      float64  `json:"longest_gap_ms"` // longest run of empty bins after the fault
	Events     []string `json:"events"`
	EndpointOK bool     `json:"endpoint_ok"`
	EPError    string   `json:"endpoint_error,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// foConfig is the ucp configuration of both sides.
func foConfig(cfg *config) ucp.Config {
	if os.Getenv(ucp.EnvTLS) == "" {
		os.Setenv(ucp.EnvTLS, cfg.Transport)
	}
	return ucp.Config{ErrorMode: ucp.ErrorModePeer, Failover: failover.Policy{Mode: failover.AnyTransport},
		NetDevices: []string{"all"}}
}

// runFailoverLocal is -l -e failover --fault: two rails, the server in
// B, the client here in A.
func runFailoverLocal(cfg *config, stdout, stderr io.Writer) (err error) {
	if cfg.Transport != "rc" {
		return fmt.Errorf("%w: --fault injects network faults; it needs -x rc", errUsage)
	}
	fs, err := parseFault(cfg.Fault)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	rails, err := netns.OpenRails(2)
	if errors.Is(err, netns.ErrNotRoot) {
		return fmt.Errorf("--fault needs two rails between two network namespaces, which need root: %w", errUnavailable)
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rails.Close()) }()
	for _, ns := range []*netns.NS{rails.A[0], rails.B[0]} {
		if err := ns.Do(func() error { return waitPortActive(10 * time.Second) }); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := rails.B[0].Command(exe, "-x", cfg.Transport)
	cmd.Env = append(os.Environ(), foServerEnv+"=1")
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the server process: %w", err)
	}
	defer func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case werr := <-done:
			err = errors.Join(err, werr)
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			err = errors.Join(err, errors.New("server process did not exit; killed"))
		}
	}()
	var tl *foTimeline
	err = rails.A[0].Do(func() error {
		var err error
		tl, err = foClient(cfg, fs, rails, bufio.NewReader(out), in)
		return err
	})
	if err != nil {
		return err
	}
	return writeTimeline(cfg, tl, stdout)
}

// foServer is the server process: it prints its worker address, reads
// the client's, and receives until its stdin closes.
func foServer(cfg *config, stdout io.Writer) error {
	uc, err := ucp.NewContext(foConfig(cfg))
	if err != nil {
		return err
	}
	defer uc.Close()
	w, err := uc.NewWorker()
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Fprintf(stdout, "addr %s\n", hex.EncodeToString(w.Address()))
	rd := bufio.NewReader(os.Stdin)
	line, err := rd.ReadString('\n')
	if err != nil {
		return fmt.Errorf("client address: %w", err)
	}
	peer, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return err
	}
	if _, err := w.Connect(peer, ucp.EPParams{}); err != nil {
		return err
	}
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, rd)
		close(stop)
	}()
	buf := make([]byte, maxSize)
	var post func()
	post = func() {
		w.TagRecv(buf, foTag, ^uint64(0), &ucp.Params{Callback: func(r *ucp.Request) {
			if r.Err() == nil {
				post()
			}
		}}).Release()
	}
	for i := 0; i < cfg.Window; i++ {
		post()
	}
	for {
		select {
		case <-stop:
			return nil
		default:
			w.Progress()
		}
	}
}

// foClient streams across the fault and returns the timeline.
func foClient(cfg *config, fs faultSpec, rails *netns.Rails, out *bufio.Reader, in io.Writer) (*foTimeline, error) {
	uc, err := ucp.NewContext(foConfig(cfg))
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	w, err := uc.NewWorker()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "addr ") {
		return nil, fmt.Errorf("server address: %q %v", line, err)
	}
	peer, err := hex.DecodeString(strings.TrimSpace(strings.TrimPrefix(line, "addr ")))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(in, "%s\n", hex.EncodeToString(w.Address()))
	ep, err := w.Connect(peer, ucp.EPParams{})
	if err != nil {
		return nil, err
	}
	run := fs.At + fs.For + 2*time.Second
	size := cfg.Sizes[0]
	tl := &foTimeline{Transport: cfg.Transport, Fault: fs.String(), Size: size, Window: cfg.Window, BinMS: ms(foBin),
		Bins: make([]int, run/foBin+1), FaultMS: -1, HealMS: -1, DetectMS: -1, SwitchMS: -1, BackMS: -1, RestoredMS: -1}
	var start time.Time
	w.SetFailoverHandler(func(ev failover.Event) {
		at := ev.At
		if at.IsZero() {
			at = time.Now()
		}
		t := ms(at.Sub(start))
		tl.Events = append(tl.Events, fmt.Sprintf("%.1f ms: %v", t, ev))
		if tl.FaultMS < 0 {
			return // before the fault: not its detection
		}
		switch {
		case ev.Kind == failover.FailedBack && tl.BackMS < 0:
			tl.BackMS = t
		case ev.Kind == failover.Restored && tl.RestoredMS < 0:
			tl.RestoredMS = t
		case (ev.Kind == failover.FailedOver || ev.Kind == failover.Exhausted) && tl.DetectMS < 0:
			tl.DetectMS = t
			if ev.Kind == failover.FailedOver {
				tl.SwitchMS = t + ms(ev.Switch)
			}
		}
	})
	// Wait for the wireup before the clock starts.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ep.TagSend(make([]byte, size), foTag, nil).Wait(ctx); err != nil {
		return nil, fmt.Errorf("first message: %w", err)
	}
	bufs := make([][]byte, cfg.Window)
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	free := make([]int, 0, cfg.Window)
	for i := range bufs {
		free = append(free, i)
	}
	done := func(r *ucp.Request) {
		free = append(free, r.UserData().(int))
		if r.Err() != nil {
			tl.Failed++
			return
		}
		tl.Completed++
		b := int(time.Since(start) / foBin)
		for len(tl.Bins) <= b {
			tl.Bins = append(tl.Bins, 0) // completions while draining
		}
		tl.Bins[b]++
	}
	inj := injector{fs: fs, rails: rails}
	defer inj.heal()
	start = time.Now()
	for el := time.Duration(0); el < run; el = time.Since(start) {
		if tl.FaultMS < 0 && el >= fs.At {
			if err := inj.inject(); err != nil {
				return nil, err
			}
			tl.FaultMS = ms(time.Since(start))
		}
		if tl.HealMS < 0 && el >= fs.At+fs.For {
			if err := inj.heal(); err != nil {
				return nil, err
			}
			tl.HealMS = ms(time.Since(start))
		}
		for len(free) > 0 && ep.Err() == nil {
			i := free[len(free)-1]
			free = free[:len(free)-1]
			ep.TagSend(bufs[i], foTag, &ucp.Params{Callback: done, UserData: i}).Release()
			tl.Sent++
		}
		w.Progress()
	}
	for stop := time.Now().Add(30 * time.Second); len(free) < cfg.Window && time.Now().Before(stop); {
		w.Progress()
	}
	tl.EndpointOK = ep.Err() == nil
	if err := ep.Err(); err != nil {
		tl.EPError = err.Error()
	}
	// The longest run of empty bins between the fault and the end of the
	// stream (the bins after it hold the drain's completions).
	gap, end := 0, min(len(tl.Bins), int(run/foBin))
	for i := int(tl.FaultMS / tl.BinMS); i >= 0 && i < end; i++ {
		n := 0
		for ; i < end && tl.Bins[i] == 0; i++ {
			n++
		}
		gap = max(gap, n)
	}
	tl.GapMS = float64(gap) * tl.BinMS
	return tl, nil
}

// injector applies a fault spec to rail 0.
type injector struct {
	fs     faultSpec
	rails  *netns.Rails
	faults []*fault.Fault
	flap   chan error
	on     bool
}

func (j *injector) inject() error {
	j.on = true
	r0 := []*netns.NS{j.rails.A[0], j.rails.B[0]}
	switch j.fs.Kind {
	case "linkdown":
		return j.rails.A[0].SetLink(false)
	case "blackhole":
		for _, ns := range r0 {
			err := ns.Do(func() error {
				f, err := fault.Drop(ns.Link(), fault.Config{BlackHole: true})
				if err == nil {
					j.faults = append(j.faults, f)
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	case "flap":
		j.flap = make(chan error, 1)
		cycles := max(1, int(j.fs.For/(2*foFlapGap)))
		go func() { j.flap <- j.rails.A[0].Flap(foFlapGap, foFlapGap, cycles) }()
		return nil
	}
	return fmt.Errorf("fault %q", j.fs.Kind)
}

// heal undoes the fault (idempotent).
func (j *injector) heal() error {
	if !j.on {
		return nil
	}
	j.on = false
	var err error
	switch j.fs.Kind {
	case "linkdown":
		err = j.rails.A[0].SetLink(true)
	case "blackhole":
		for _, f := range j.faults {
			err = errors.Join(err, f.Close())
		}
	case "flap":
		select {
		case err = <-j.flap:
		case <-time.After(foMaxRun):
			err = errors.New("the flap did not end")
		}
	}
	return err
}

// writeTimeline writes failover.json and failover.svg into --out and
// prints a summary.
func writeTimeline(cfg *config, tl *foTimeline, stdout io.Writer) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(tl, "", "  ")
	if err != nil {
		return err
	}
	jp, sp := filepath.Join(cfg.Out, "failover.json"), filepath.Join(cfg.Out, "failover.svg")
	if err := os.WriteFile(jp, append(js, '\n'), 0o644); err != nil {
		return err
	}
	marks := []plot.Mark{}
	add := func(v float64, label string) {
		if v >= 0 {
			marks = append(marks, plot.Mark{At: time.Duration(v * float64(time.Millisecond)), Label: label})
		}
	}
	add(tl.FaultMS, tl.Fault+": fault")
	add(tl.DetectMS, "detected")
	add(tl.SwitchMS, "switched")
	add(tl.HealMS, "fault removed")
	add(tl.RestoredMS, "lane restored")
	add(tl.BackMS, "failed back")
	var svg strings.Builder
	err = plot.WriteTimeline(&svg, plot.Timeline{
		Title:  fmt.Sprintf("perftest -e failover: %d B tag messages over %s, %s", tl.Size, tl.Transport, tl.Fault),
		YLabel: "messages per 10 ms", Bin: foBin, Counts: tl.Bins, Marks: marks})
	if err != nil {
		return err
	}
	if err := os.WriteFile(sp, []byte(svg.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "failover %s: %d sent, %d completed, %d failed; fault at %.1f ms, detected at %.1f ms, switched at %.1f ms, lane restored at %.1f ms, failed back at %.1f ms; longest gap %.0f ms; endpoint ok %v\n",
		tl.Fault, tl.Sent, tl.Completed, tl.Failed, tl.FaultMS, tl.DetectMS, tl.SwitchMS, tl.RestoredMS, tl.BackMS, tl.GapMS, tl.EndpointOK)
	fmt.Fprintf(stdout, "wrote %s and %s\n", jp, sp)
	return nil
}
