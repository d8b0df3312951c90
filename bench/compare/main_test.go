package main

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	runs := []figures{{Iterations: 10, LatMedian: 3, BW: 100}, {Iterations: 10, LatMedian: 1, BW: 300}, {Iterations: 10, LatMedian: 2, BW: 200}}
	f, e := summarize(runs, []string{"boom"})
	if f == nil || f.LatMedian != 2 || f.BW != 200 || f.Iterations != 10 {
		t.Errorf("median of three: %+v", f)
	}
	if e != "1 of 4 runs failed: boom" {
		t.Errorf("error %q", e)
	}
	if f, _ := summarize(runs[:2], nil); f.LatMedian != 2 || f.BW != 200 {
		t.Errorf("median of two: %+v", f)
	}
	if f, e := summarize(nil, []string{"no"}); f != nil || e != "no" {
		t.Errorf("no runs: %+v, %q", f, e)
	}
}

func TestMarkdown(t *testing.T) {
	res := &results{Repeats: 3, Rows: []row{
		{Test: "am_lat", Transport: "shm", Size: 8, Iterations: 100, UCXLayout: "short",
			Ours: &figures{LatMedian: 0.4, BW: 25}, UCX: &figures{LatMedian: 0.5, BW: 20}},
		{Test: "am_bw", Transport: "shm", Size: 8, Iterations: 100, UCXLayout: "short",
			Ours: &figures{LatMedian: 0.3, BW: 25}, UCX: &figures{LatMedian: 0.4, BW: 20}},
		{Test: "am_lat", Transport: "shm", Size: 1 << 20, Iterations: 100, UCXLayout: "zcopy",
			OursErr: "size 1048576 exceeds the iface's limit 8192", UCXErr: "unsupported"},
	}}
	var b bytes.Buffer
	res.markdown(&b)
	s := b.String()
	if !strings.Contains(s, "Both tools ran at normal priority (without -rt).") {
		t.Errorf("table does not say the run was not real-time:\n%s", s)
	}
	res.RealTime = true
	var rt bytes.Buffer
	res.markdown(&rt)
	if !strings.Contains(rt.String(), "Both tools ran at real-time priority (-rt: SCHED_RR 1).") {
		t.Errorf("table does not say the run was real-time:\n%s", &rt)
	}
	for _, want := range []string{
		// Latency tests: bandwidth from the median (8 B / 0.4 µs = 19.07 MB/s).
		"| am_lat (UCX -D short) | 8 | 100 | 0 | 0.4 | 0.5 | 0.80 | 19.1 | 15.3 | 1.25 |",
		"| am_bw (UCX -D short) | 8 | 100 | 0 | 0.3 | 0.4 | 0.75 | 25.0 | 20.0 | 1.25 |",
		"| am_lat | 1m | 100 | 0 | – | – | – | – | – | – |",
		"- ucgo am_lat from 1m: size 1048576 exceeds",
		"medians of up to 3 pairs of back-to-back runs",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func TestListensOn(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skip(err)
	}
	if !listensOn(table, port) {
		t.Errorf("port %d listens but is not found in /proc/net/tcp", port)
	}
	ln.Close()
	table, _ = os.ReadFile("/proc/net/tcp")
	if listensOn(table, port) {
		t.Errorf("port %d closed but found listening", port)
	}
}

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	c, err := parseFlags([]string{"-t", "tag_lat,put_bw", "-x", "rc", "-s", "8,4k,1m", "-max-bytes", "1m"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tests) != 2 || c.Tests[1].name != "put_bw" || c.Transports[0].name != "rc" || c.Sizes[2] != 1<<20 {
		t.Errorf("parsed %+v", c)
	}
	if it, w := c.iterations(1 << 20); it != minIters || w != 10 {
		t.Errorf("1 MiB under -max-bytes 1m: %d iterations, %d warm-up", it, w)
	}
	if it, _ := c.iterations(8); it != 10000 {
		t.Errorf("8 B: %d iterations", it)
	}
	if c.RT {
		t.Errorf("-rt set without the flag")
	}
	if c, err := parseFlags([]string{"-rt"}, &stderr); err != nil || !c.RT {
		t.Errorf("-rt: %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-t", "nope"}, {"-x", "ib"}, {"-s", "0"}, {"-r", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPairedRatios: the table's ratio is the median of the pairs' ratios,
// not the ratio of the two tools' medians, and a pair whose UCX figure
// jumped past stateJump flags the row.
func TestPairedRatios(t *testing.T) {
	lat := findTestMap("tag_lat")
	bw := findTestMap("tag_bw")
	// The host's state flips after the second pair: both tools slow down
	// 3x, so each pair's ratio stays 0.5 while the ratio of the medians
	// (1.5 / 1.0) is far from it.
	oursLat := []float64{0.10, 0.10, 0.30, 0.30, 0.30}
	ucxLat := []float64{0.20, 0.20, 0.60, 0.60, 0.60}
	r := row{Test: "tag_lat", Transport: "shm", Size: 8, Iterations: 100}
	for i := range oursLat {
		o, u := figures{LatMedian: oursLat[i]}, figures{LatMedian: ucxLat[i]}
		r.OursRuns, r.UCXRuns = append(r.OursRuns, o), append(r.UCXRuns, u)
		r.Pairs = append(r.Pairs, newPair(lat, 8, o, u))
	}
	r.Ours, _ = summarize(r.OursRuns, nil)
	r.UCX, _ = summarize(r.UCXRuns, nil)
	r.flagStateChange(lat)
	if r.StateChange == "" || !strings.Contains(r.StateChange, "pairs 2 and 3") {
		t.Errorf("state change not flagged between pairs 2 and 3: %q", r.StateChange)
	}
	if v, ok := r.pairedRatio(func(p pair) float64 { return p.LatRatio }); !ok || v != 0.5 {
		t.Errorf("paired latency ratio %v, %v; want 0.5", v, ok)
	}
	// A steady bandwidth row: UCX moves by 1.2x at most, nothing flagged.
	s := row{Test: "tag_bw", Transport: "shm", Size: 1 << 20, Iterations: 100}
	for i, u := range []float64{1000, 1100, 1200, 1000, 1100} {
		o := []float64{900, 1200, 1200, 500, 1100}[i]
		s.Pairs = append(s.Pairs, newPair(bw, 1<<20, figures{BW: o}, figures{BW: u}))
	}
	s.flagStateChange(bw)
	if s.StateChange != "" {
		t.Errorf("steady row flagged: %s", s.StateChange)
	}
	// ratios 0.9, 1.09, 1, 0.5, 1: median 1
	if v, _ := s.pairedRatio(func(p pair) float64 { return p.BWRatio }); v < 0.999 || v > 1.001 {
		t.Errorf("paired bandwidth ratio %v, want 1", v)
	}
	res := &results{Repeats: 5, Rows: []row{r, s}}
	var b bytes.Buffer
	res.markdown(&b)
	for _, want := range []string{
		"| tag_lat | 8 | 100 | 5 | 0.3 | 0.6 | 0.50 † |",
		"| tag_bw | 1m | 100 | 5 |",
		"| 1.00 |",
		"- tag_lat 8: UCX's figure went from 0.2 to 0.6 µs between pairs 2 and 3",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
