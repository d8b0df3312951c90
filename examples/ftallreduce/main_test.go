package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/mpitest"
	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/internal/slurmtest"
)

func TestMain(m *testing.M) { mpitest.Main(m, run) }

// expected is the sum of all results when the ranks of group took part
// from iteration from on and all n ranks before.
func expected(n, iters, length, from int, group []int) uint64 {
	var total uint64
	for i := 0; i < iters; i++ {
		members := group
		if i < from {
			members = nil
			for r := 0; r < n; r++ {
				members = append(members, r)
			}
		}
		for j := 0; j < length; j++ {
			for _, r := range members {
				total += uint64((r+1)*(i+1) + j)
			}
		}
	}
	return total
}

var lineRE = regexp.MustCompile(`^rank (\d+): (\d+) iterations, sum (\d+), ranks ([\d,]+) from iteration (\d+) of epoch (\d+)(.*)$`)

type result struct {
	rank, from, epoch int
	sum               uint64
	group             []int
	rest              string
}

// results parses the ranks' result lines, sorted by rank.
func results(t *testing.T, out string) []result {
	t.Helper()
	var rs []result
	for _, l := range mpitest.Lines(out, "rank ") {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected line %q in:\n%s", l, out)
		}
		var r result
		r.rank, _ = strconv.Atoi(m[1])
		r.sum, _ = strconv.ParseUint(m[3], 10, 64)
		for _, s := range strings.Split(m[4], ",") {
			g, _ := strconv.Atoi(s)
			r.group = append(r.group, g)
		}
		r.from, _ = strconv.Atoi(m[5])
		r.epoch, _ = strconv.Atoi(m[6])
		r.rest = m[7]
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].rank < rs[j].rank })
	return rs
}

// checkResults checks that every survivor, and only they, printed the sum
// the survivors expect, having seen the victim fail with status.
func checkResults(t *testing.T, out string, n, iters, length, victim, at int, status string) {
	t.Helper()
	rs := results(t, out)
	var survivors []int
	for r := 0; r < n; r++ {
		if r != victim {
			survivors = append(survivors, r)
		}
	}
	if len(rs) != len(survivors) {
		t.Fatalf("%d result lines, want one per survivor %v:\n%s", len(rs), survivors, out)
	}
	for k, r := range rs {
		// A survivor that lost the victim's vector of iteration at-1
		// (dropped when its failure was seen first) resumes there.
		if r.rank != survivors[k] || fmt.Sprint(r.group) != fmt.Sprint(survivors) || r.epoch != 1 || (r.from != at && r.from != at-1) {
			t.Fatalf("rank %d: group %v from iteration %d of epoch %d; want %v from %d (or %d) of epoch 1:\n%s",
				r.rank, r.group, r.from, r.epoch, survivors, at, at-1, out)
		}
		if r.from != rs[0].from {
			t.Fatalf("survivors disagree on the iteration to resume at:\n%s", out)
		}
		if want := expected(n, iters, length, r.from, survivors); r.sum != want {
			t.Fatalf("rank %d: sum %d, want %d:\n%s", r.rank, r.sum, want, out)
		}
		if want := fmt.Sprintf("; rank %d failed (%s): ", victim, status); !strings.HasPrefix(r.rest, want) {
			t.Fatalf("rank %d: %q, want the victim's failure as %q", r.rank, r.rest, want)
		}
		if want := "; matching was suspended until the purge"; !strings.HasSuffix(r.rest, want) {
			t.Fatalf("rank %d: %q, want %q", r.rank, r.rest, want)
		}
	}
	t.Logf("survivors %v resumed at iteration %d, sum %d", survivors, rs[0].from, rs[0].sum)
}

// checkKill runs the job with rank victim killed in iteration at and
// checks that every survivor, and only they, printed the sum the
// survivors expect, having seen the victim fail with status.
func checkKill(t *testing.T, j mpitest.Job, iters, length, victim, at int, status string) {
	t.Helper()
	j.Flags = append(j.Flags, "-disable-auto-cleanup")
	j.Args = append(j.Args, fmt.Sprint("-iters=", iters), fmt.Sprint("-len=", length), fmt.Sprint("-kill=", victim), fmt.Sprint("-at=", at))
	out, code := mpitest.Run(t, j)
	// hydra reports the victim's 137 from its supervisor at times only
	// (1 or 0 at others); the survivors' reports of its death are what
	// counts
	if strings.Contains(out, "rank error") {
		t.Fatalf("mpiexec exit code %d, a survivor failed:\n%s", code, out)
	}
	checkResults(t, out, j.N, iters, length, victim, at, status)
}

// Under Slurm (a one-node cluster): srun --mpi=pmi2 -n 4
// --kill-on-bad-exit=0, rank 1 killed in iteration 25.
func TestSrunKill(t *testing.T) {
	c := slurmtest.Start(t, 2)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(mpitest.Env("-iters=50", "-len=256", "-kill=1", "-at=25"), "UCGO_TLS=shm")
	out, code := c.Srun(t, 4, 2*time.Minute, env, "--kill-on-bad-exit=0", self, "-test.run=^$")
	if code == 0 || !strings.Contains(out, "task 1: Exited with exit code 137") {
		t.Fatalf("srun exit code %d, want a failure naming task 1's 137:\n%s", code, out)
	}
	checkResults(t, out, 4, 50, 256, 1, 25, "peer failed")
}

// Four ranks over shm, no failure: every rank prints the sum of all four.
func TestMPIExec(t *testing.T) {
	out, code := mpitest.Run(t, mpitest.Job{N: 4, Args: []string{"-iters=40", "-len=100"}})
	if code != 0 {
		t.Fatalf("mpiexec exit code %d:\n%s", code, out)
	}
	rs := results(t, out)
	if len(rs) != 4 {
		t.Fatalf("%d result lines:\n%s", len(rs), out)
	}
	for k, r := range rs {
		if r.rank != k || r.epoch != 0 || r.from != 0 || r.sum != expected(4, 40, 100, 0, r.group) || len(r.group) != 4 || r.rest != "" {
			t.Fatalf("rank %d: %+v, want sum %d:\n%s", k, r, expected(4, 40, 100, 0, []int{0, 1, 2, 3}), out)
		}
	}
}

// mpiexec -disable-auto-cleanup -n 4 over shm: rank 2 SIGKILLs itself in
// the middle of the loop after sending to one of the three others; the
// survivors see the peer-failed status, agree, shrink and finish. Then
// rank 0 (the one that starts PMI and every loop), and with five ranks a
// victim that reaches two of four.
func TestMPIExecKill(t *testing.T) {
	for _, c := range []struct{ n, victim, at int }{{4, 2, 30}, {4, 0, 11}, {5, 3, 17}} {
		t.Run(fmt.Sprintf("n%d-kill%d-at%d", c.n, c.victim, c.at), func(t *testing.T) {
			checkKill(t, mpitest.Job{N: c.n, Env: []string{"UCGO_TLS=shm"}}, 60, 256, c.victim, c.at, "peer failed")
		})
	}
}

// The same over rc, each rank on its own host (a network namespace on a
// shared bridge) launched through hydra's ssh launcher.
func TestMPIExecKillRC(t *testing.T) {
	star, err := netns.NewStar(t, 4)
	if err != nil {
		t.Fatal(err)
	}
	checkKill(t, mpitest.Job{N: 4, Star: star, Env: []string{"UCGO_TLS=rc"}}, 40, 256, 2, 20, "peer failed")
}

// The command README.md gives, as typed: four ranks of "go run" under
// mpiexec, rank 2 killed in iteration 30 of 100.
func TestReadmeCommand(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (Debian package mpich)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpiexec, "-disable-auto-cleanup", "-n", "4", gobin, "run", "./examples/ftallreduce", "-kill", "2", "-at", "30")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("did not finish in 5 minutes:\n%s", out)
	}
	if strings.Contains(string(out), "ftallreduce:") {
		t.Fatalf("mpiexec: %v, a survivor failed:\n%s", err, out)
	}
	rs := results(t, string(out))
	if len(rs) != 3 {
		t.Fatalf("%d result lines, want 3:\n%s", len(rs), out)
	}
	for _, r := range rs {
		if want := expected(4, 100, 1024, r.from, []int{0, 1, 3}); r.rank == 2 || r.sum != want || (r.from != 29 && r.from != 30) {
			t.Fatalf("rank %d: sum %d from iteration %d, want %d from 29 or 30:\n%s", r.rank, r.sum, r.from, want, out)
		}
	}
}
