package bootstrap

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/slurmtest"
)

// Under Slurm's srun --mpi=pmi2 on a one-node cluster: the key-value
// space in both protocol versions (Slurm's pmi2 plugin speaks PMI-1 too),
// a world of three ranks, and abort.
func TestSlurm(t *testing.T) {
	c := slurmtest.Start(t, 2)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sorted := func(out string) string {
		var ls []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(l, "rank ") {
				ls = append(ls, l)
			}
		}
		sort.Strings(ls)
		return strings.Join(ls, "\n")
	}
	for _, v := range []string{"1", "2", ""} {
		t.Run("kvs-pmi"+v, func(t *testing.T) {
			out, code := c.Srun(t, 3, 2*time.Minute, []string{childEnv + "=kvs", VersionEnv + "=" + v}, self, "-test.run=^$")
			version := 2
			if v == "1" {
				version = 1
			}
			var want []string
			for r := 0; r < 3; r++ {
				want = append(want, fmt.Sprintf("rank %d size 3 version %d got hello-from-0,hello-from-1,hello-from-2", r, version))
			}
			if code != 0 || sorted(out) != strings.Join(want, "\n") {
				t.Fatalf("srun exit code %d, output:\n%s\nwant:\n%s", code, out, strings.Join(want, "\n"))
			}
		})
	}
	t.Run("world", func(t *testing.T) {
		out, code := c.Srun(t, 3, 2*time.Minute, []string{childEnv + "=world", "UCGO_WORLD_EAGER=1"}, self, "-test.run=^$")
		var want []string
		for r := 0; r < 3; r++ {
			want = append(want, fmt.Sprintf("rank %d of 3 pmi-2 got 0>%d 1>%d 2>%d", r, r, r, r))
		}
		if code != 0 || sorted(out) != strings.Join(want, "\n") {
			t.Fatalf("srun exit code %d, output:\n%s\nwant:\n%s", code, out, strings.Join(want, "\n"))
		}
	})
	for _, v := range []string{"1", "2"} {
		t.Run("barrier-pmi"+v, func(t *testing.T) {
			out, code := c.Srun(t, 4, 2*time.Minute, []string{childEnv + "=barrier", VersionEnv + "=" + v, "UCGO_BARRIER_DIR=" + t.TempDir()}, self, "-test.run=^$")
			if code != 0 || strings.Count(out, "passed 3 barriers") != 4 {
				t.Fatalf("srun exit code %d, output:\n%s", code, out)
			}
		})
	}
	for _, v := range []string{"1", "2"} {
		t.Run("abort-pmi"+v, func(t *testing.T) {
			// the aborting rank sleeps ten minutes: only the abort ends
			// the step within the limit
			out, code := c.Srun(t, 3, 2*time.Minute, []string{childEnv + "=abort", VersionEnv + "=" + v}, self, "-test.run=^$")
			if code == 0 || strings.Contains(out, "bootstrap child:") {
				t.Fatalf("srun exit code %d after an abort, output:\n%s", code, out)
			}
		})
	}
}
