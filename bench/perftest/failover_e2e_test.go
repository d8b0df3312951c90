package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

// TestFailoverTimeline runs perftest -l -x rc -e failover with each fault
// briefly (as root: two rails between two namespaces) and checks the
// timeline it writes: every completed message is in a bin, the fault and
// its removal are marked in the JSON and the SVG.
func TestFailoverTimeline(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a failover run builds two rails between two network namespaces")
	}
	bin := buildBinary(t)
	for _, f := range []string{"linkdown@500ms+500ms", "blackhole@500ms+500ms", "flap@500ms+800ms"} {
		t.Run(strings.Split(f, "@")[0], func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := runBinary(t, bin, "-l", "-x", "rc", "-e", "failover", "--fault", f, "-out", dir)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			t.Log(strings.TrimSpace(out))
			b, err := os.ReadFile(filepath.Join(dir, "failover.json"))
			if err != nil {
				t.Fatal(err)
			}
			var tl foTimeline
			if err := json.Unmarshal(b, &tl); err != nil {
				t.Fatal(err)
			}
			sum := 0
			for _, n := range tl.Bins {
				sum += n
			}
			if tl.Sent == 0 || sum != tl.Completed || tl.Completed+tl.Failed > tl.Sent {
				t.Errorf("sent %d, completed %d (%d in the bins), failed %d", tl.Sent, tl.Completed, sum, tl.Failed)
			}
			if tl.FaultMS < 500 || tl.HealMS < tl.FaultMS || tl.BinMS != 10 {
				t.Errorf("fault at %v ms, removed at %v ms, bins of %v ms", tl.FaultMS, tl.HealMS, tl.BinMS)
			}
			svg, err := os.ReadFile(filepath.Join(dir, "failover.svg"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := plot.Elements(svg)
			if err != nil {
				t.Fatal(err)
			}
			if c["line.mark"] < 2 || c["rect.bin"] == 0 {
				t.Errorf("svg: %d marks, %d bins", c["line.mark"], c["rect.bin"])
			}
		})
	}
}
