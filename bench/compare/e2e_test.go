package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareSmoke runs compare on one test and one size with both tools
// and checks every output file.
func TestCompareSmoke(t *testing.T) {
	requireTools(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-t", "am_lat,put_bw", "-x", "shm", "-s", "8,1k", "-n", "300", "-w", "10", "-r", "2", "-o", out, "-no-install"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, stdout.Bytes()[:len(md)]) {
		t.Errorf("table.md differs from the printed table")
	}
	for _, want := range []string{"### shm", "| am_lat (UCX -D short) | 8 | 300 |", "| put_bw"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("%d rows, want 4: %s", len(res.Rows), b)
	}
	for _, r := range res.Rows {
		if r.Ours == nil || r.UCX == nil {
			t.Errorf("%s %d: ucgo %v (%s), UCX %v (%s)", r.Test, r.Size, r.Ours, r.OursErr, r.UCX, r.UCXErr)
			continue
		}
		if r.Ours.LatMedian <= 0 || r.UCX.LatMedian <= 0 || r.Ours.BW <= 0 || r.UCX.BW <= 0 {
			t.Errorf("%s %d: figures not positive: ucgo %+v, UCX %+v", r.Test, r.Size, *r.Ours, *r.UCX)
		}
		if len(r.OursRuns) != 2 || len(r.UCXRuns) != 2 || len(r.Pairs) != 2 {
			t.Errorf("%s %d: %d and %d runs, %d pairs, want 2 of each", r.Test, r.Size, len(r.OursRuns), len(r.UCXRuns), len(r.Pairs))
		}
		for i, p := range r.Pairs {
			if p.LatRatio <= 0 || p.BWRatio <= 0 || p.UCX <= 0 {
				t.Errorf("%s %d: pair %d has a figure that is not positive: %+v", r.Test, r.Size, i, p)
			}
		}
		if r.UCX.Iterations != 300 {
			t.Errorf("%s %d: UCX ran %d iterations, want 300", r.Test, r.Size, r.UCX.Iterations)
		}
	}
	svg, err := os.ReadFile(filepath.Join(out, "shm.svg"))
	if err != nil {
		t.Fatal(err)
	}
	c := checkSVG(t, svg)
	if got := c["circle.point"] + c["rect.point"]; got != 8 {
		t.Errorf("shm.svg has %d points, want 8", got)
	}
	csv, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(csv), "\n"); n != 1+8 {
		t.Errorf("results.csv has %d lines, want 9", n)
	}
}

// TestCompareRCLoopback runs the rc-lo row: ours over lo against UCX's tcp
// over lo, one pair.
func TestCompareRCLoopback(t *testing.T) {
	requireTools(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-t", "am_lat", "-x", "rc-lo", "-s", "8", "-n", "300", "-w", "10", "-r", "1", "-o", out, "-no-install"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	for _, want := range []string{"### rc-lo (UCX: ucgo rc over lo;", "| am_lat (UCX -D short) | 8 | 300 | 1 |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, &stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "rc-lo.svg")); err != nil {
		t.Error(err)
	}
}

// requireTools skips an end-to-end run without UCX's ucx_perftest or the
// go command (which builds bench/perftest).
func requireTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ucx_perftest"); err != nil {
		t.Skip("ucx_perftest is not installed (Debian: apt-get install ucx-utils); skipping the end-to-end run")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is needed to build bench/perftest")
	}
}
