package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/bench/internal/plot"
)

// TestMain serves as the child process when the measuring side re-executes
// the test binary with -child.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestScale(t *testing.T) {
	for _, x := range []string{"shm", "rc"} {
		t.Run(x, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run([]string{"-x", x, "-n", "1,3,6", "-procs", "2", "-iters", "200", "-w", "20", "-o", out, "-json"}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, &stdout, &stderr)
			}
			var res results
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
				t.Fatalf("%v\n%s", err, &stdout)
			}
			if len(res.Steps) != 3 || res.Procs != 2 || res.Transport != x {
				t.Fatalf("results: %+v", res)
			}
			prev := res.Base
			for _, s := range res.Steps {
				if s.ConnectMs <= 0 || s.LatMedianUs <= 0 || s.LatP99Us < s.LatMedianUs || s.RSS <= 0 {
					t.Errorf("%d peers: %+v", s.Peers, s)
				}
				// Each endpoint holds at least one descriptor (shm: the
				// peer's pidfd; rc: its connection-manager link), and an
				// shm endpoint maps the peer's segment.
				if s.FDs <= prev.FDs {
					t.Errorf("%d peers: %d descriptors, %d before", s.Peers, s.FDs, prev.FDs)
				}
				if x == "shm" && s.Segments <= prev.Segments {
					t.Errorf("%d peers: %d segments, %d before", s.Peers, s.Segments, prev.Segments)
				}
				prev = s.usage
			}
			b, err := os.ReadFile(filepath.Join(out, "scale.svg"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := plot.Elements(b)
			if err != nil {
				t.Fatal(err)
			}
			if c["g.panel"] != 4 || c["circle.point"] < 4*3-1 {
				t.Errorf("scale.svg: %d panels, %d points", c["g.panel"], c["circle.point"])
			}
			if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
				t.Error(err)
			}
			table := res.table()
			for _, want := range []string{"| 6 |", "from 1 to 6 peers, per peer:"} {
				if !strings.Contains(table, want) {
					t.Errorf("table lacks %q:\n%s", want, table)
				}
			}
		})
	}
}

func TestMemfdMappings(t *testing.T) {
	maps := `7f0000000000-7f0000200000 rw-s 00000000 00:01 1234  /memfd:ucgo-shm (deleted)
7f0000200000-7f0000201000 r--p 00000000 08:01 99 /usr/lib/libc.so
7f0000300000-7f0000301000 rw-s 00000000 00:01 1235  /memfd:ucgo-shm (deleted)
`
	n, size, err := memfdMappings([]byte(maps))
	if err != nil || n != 2 || size != 0x200000+0x1000 {
		t.Errorf("memfdMappings = %d, %d, %v", n, size, err)
	}
	if _, _, err := memfdMappings([]byte("zz-7f /memfd:x\n")); err == nil {
		t.Error("a malformed line was accepted")
	}
	u, err := readUsage()
	if err != nil || u.RSS <= 0 || u.FDs < 3 {
		t.Errorf("readUsage = %+v, %v", u, err)
	}
}

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	c, err := parseFlags([]string{"-x", "rc", "-n", "1,8,64"}, &stderr)
	if err != nil || c.X != "rc" || len(c.Steps) != 3 || c.Steps[2] != 64 {
		t.Fatalf("%+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-x", "ib"}, {"-n", "4,2"}, {"-n", "0"}, {"-procs", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
