package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/internal/mpitest"
	"github.com/ucgo/ucgo/internal/netns"
)

func TestMain(m *testing.M) { mpitest.Main(m, run) }

var lineRE = regexp.MustCompile(`(?m)^pingpong: 2000 round trips of (\d+) bytes checked, \d+\.\d\d us one-way$`)

// Two ranks under mpiexec over shm, eager and rendezvous sizes.
func TestMPIExec(t *testing.T) {
	for _, s := range []string{"8", "100000"} {
		out, code := mpitest.Run(t, mpitest.Job{N: 2, Args: []string{"-n=2000", "-s=" + s}})
		if m := lineRE.FindStringSubmatch(out); code != 0 || m == nil || m[1] != s || strings.Count(out, "pingpong:") != 1 {
			t.Fatalf("exit code %d, output:\n%s", code, out)
		}
	}
}

// Three ranks are refused with a clear error.
func TestMPIExecSize(t *testing.T) {
	out, code := mpitest.Run(t, mpitest.Job{N: 3})
	if code == 0 || !strings.Contains(out, "pingpong runs on 2 ranks, not 3") {
		t.Fatalf("exit code %d, output:\n%s", code, out)
	}
}

// Between two hosts (network namespaces on one bridge, launched through
// hydra's ssh launcher), over rc.
func TestBetweenHosts(t *testing.T) {
	star, err := netns.NewStar(t, 2)
	if err != nil {
		t.Fatal(err)
	}
	out, code := mpitest.Run(t, mpitest.Job{N: 2, Star: star, Args: []string{"-n=2000"}, Env: []string{"UCGO_TLS=rc"}})
	if m := lineRE.FindStringSubmatch(out); code != 0 || m == nil || m[1] != "8" {
		t.Fatalf("exit code %d, output:\n%s", code, out)
	}
}
