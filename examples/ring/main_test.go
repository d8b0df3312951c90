package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/internal/mpitest"
	"github.com/ucgo/ucgo/internal/netns"
)

func TestMain(m *testing.M) { mpitest.Main(m, run) }

func want(n, laps int) string {
	return fmt.Sprintf("ring: %d ranks, %d laps, token %d\n", n, laps, laps*n*(n+1)/2)
}

// Four ranks under mpiexec over shm.
func TestMPIExec(t *testing.T) {
	out, code := mpitest.Run(t, mpitest.Job{N: 4, Args: []string{"-laps=50"}})
	if code != 0 || !strings.Contains(out, want(4, 50)) || strings.Count(out, "ring:") != 1 {
		t.Fatalf("exit code %d, output:\n%s\nwant %q", code, out, want(4, 50))
	}
}

// Between hosts: each of four ranks on its own host (a network namespace
// on a shared bridge), launched by mpiexec through hydra's ssh launcher
// as on a cluster, talking over rc.
func TestBetweenHosts(t *testing.T) {
	star, err := netns.NewStar(t, 4)
	if err != nil {
		t.Fatal(err)
	}
	out, code := mpitest.Run(t, mpitest.Job{N: 4, Star: star, Args: []string{"-laps=20"}, Env: []string{"UCGO_TLS=rc"}})
	if code != 0 || !strings.Contains(out, want(4, 20)) {
		t.Fatalf("exit code %d, output:\n%s\nwant %q", code, out, want(4, 20))
	}
}
