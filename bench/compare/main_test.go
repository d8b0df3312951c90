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
	for _, want := range []string{
		// Latency tests: bandwidth from the median (8 B / 0.4 µs = 19.07 MB/s).
		"| am_lat (UCX -D short) | 8 | 100 | 0.4 | 0.5 | 0.80 | 19.1 | 15.3 | 1.25 |",
		"| am_bw (UCX -D short) | 8 | 100 | 0.3 | 0.4 | 0.75 | 25.0 | 20.0 | 1.25 |",
		"| am_lat | 1m | 100 | – | – | – | – | – | – |",
		"- ucgo am_lat from 1m: size 1048576 exceeds",
		"medians of 3 alternating runs",
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
	for _, bad := range [][]string{{"-t", "nope"}, {"-x", "ib"}, {"-s", "0"}, {"-r", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
