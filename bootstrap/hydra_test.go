package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv names the role a re-executed test binary plays under mpiexec.
const childEnv = "UCGO_BOOTSTRAP_TEST_CHILD"

var childRoles = map[string]func() error{
	"kvs":   kvsChild,
	"abort": abortChild,
}

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		fn := childRoles[role]
		if fn == nil {
			fmt.Fprintln(os.Stderr, "no child role", role)
			os.Exit(2)
		}
		if err := fn(); err != nil {
			fmt.Fprintln(os.Stderr, "bootstrap child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kvsChild puts a value, meets the other ranks at a barrier, reads every
// rank's value (one of them longer than a PMI-1 line of old), meets them
// again and prints what it saw.
func kvsChild() error {
	c, err := FromEnv()
	if err != nil {
		return err
	}
	if err := c.Put(fmt.Sprintf("v%d", c.Rank()), fmt.Sprintf("hello-from-%d", c.Rank())); err != nil {
		return err
	}
	if err := c.Put(fmt.Sprintf("long%d", c.Rank()), strings.Repeat("ab", c.MaxValue()/2)); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	var got []string
	for r := 0; r < c.Size(); r++ {
		v, err := c.Get(fmt.Sprintf("v%d", r))
		if err != nil {
			return err
		}
		long, err := c.Get(fmt.Sprintf("long%d", r))
		if err != nil {
			return err
		}
		if long != strings.Repeat("ab", c.MaxValue()/2) {
			return fmt.Errorf("rank %d's long value: %d bytes", r, len(long))
		}
		got = append(got, v)
	}
	if _, err := c.Get("missing"); err == nil {
		return fmt.Errorf("get of a missing key succeeded")
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	fmt.Printf("rank %d size %d version %d got %s\n", c.Rank(), c.Size(), c.Version(), strings.Join(got, ","))
	return c.Finalize()
}

// abortChild: the last rank aborts the job while the others wait in a
// barrier that can never complete.
func abortChild() error {
	c, err := FromEnv()
	if err != nil {
		return err
	}
	if c.Rank() == c.Size()-1 {
		if err := c.Abort(7, "test abort"); err != nil {
			return err
		}
		time.Sleep(10 * time.Minute)
		return fmt.Errorf("still alive ten minutes after Abort")
	}
	return c.Barrier()
}

// mpiexec runs this test binary as n ranks of role under mpiexec with
// the extra mpiexec flags and environment, bounded by limit.
func mpiexec(t *testing.T, n int, role string, limit time.Duration, flags []string, env ...string) ([]byte, error) {
	t.Helper()
	path, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (Debian package mpich)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append(append([]string{}, flags...), "-n", fmt.Sprint(n), os.Args[0], "-test.run=^$")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(append(os.Environ(), childEnv+"="+role, "GORACE=atexit_sleep_ms=0"), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpiexec %v did not finish in %v:\n%s", args, limit, out)
	}
	return out, err
}

// Three ranks under MPICH's hydra in each protocol version, and over
// PMI_PORT: rank, size, put, barrier, get of long values and of a missing
// key work against the real process manager.
func TestMPIExec(t *testing.T) {
	for _, c := range []struct {
		name    string
		flags   []string
		env     string
		version int
	}{
		{"pmi1", nil, "UCGO_PMI=1", 1},
		{"pmi2", nil, "UCGO_PMI=2", 2},
		{"auto", nil, "UCGO_PMI=", 2},
		{"pmi1-port", []string{"-pmi-port"}, "UCGO_PMI=1", 1},
		{"pmi2-port", []string{"-pmi-port"}, "UCGO_PMI=2", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := mpiexec(t, 3, "kvs", 2*time.Minute, c.flags, c.env)
			if err != nil {
				t.Fatalf("mpiexec: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			sort.Strings(lines)
			var want []string
			for r := 0; r < 3; r++ {
				want = append(want, fmt.Sprintf("rank %d size 3 version %d got hello-from-0,hello-from-1,hello-from-2", r, c.version))
			}
			if strings.Join(lines, "\n") != strings.Join(want, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
			}
		})
	}
}

// Abort in either version ends the job at once: the ranks waiting in a
// barrier that cannot complete and the aborting rank (asleep) are killed
// and mpiexec fails, with the exit code where PMI-1 carries it.
func TestMPIExecAbort(t *testing.T) {
	for _, v := range []string{"1", "2"} {
		t.Run("pmi"+v, func(t *testing.T) {
			out, err := mpiexec(t, 3, "abort", 2*time.Minute, nil, "UCGO_PMI="+v)
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("mpiexec: %v, want a failed exit after the abort\n%s", err, out)
			}
			if strings.Contains(string(out), "bootstrap child:") {
				t.Fatalf("a rank failed instead of being aborted:\n%s", out)
			}
			if v == "1" && ee.ExitCode() != 7 {
				t.Fatalf("mpiexec exit code %d, want the aborting rank's 7\n%s", ee.ExitCode(), out)
			}
		})
	}
}

func init() {
	childRoles["supervised"] = supervisedChild
}

// supervisedChild: under Supervise, the last rank SIGKILLs itself after a
// barrier; the others outlive it and print.
func supervisedChild() error {
	Supervise()
	c, err := FromEnv()
	if err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if c.Rank() == c.Size()-1 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	time.Sleep(500 * time.Millisecond)
	fmt.Printf("rank %d outlived rank %d\n", c.Rank(), c.Size()-1)
	return c.Close()
}

// Under Supervise and -disable-auto-cleanup, a rank killed by SIGKILL
// leaves the others running. Without Supervise hydra kills them.
func TestMPIExecSupervise(t *testing.T) {
	out, err := mpiexec(t, 3, "supervised", 2*time.Minute, []string{"-disable-auto-cleanup"})
	t.Logf("mpiexec: %v", err)
	for r := 0; r < 2; r++ {
		if want := fmt.Sprintf("rank %d outlived rank 2\n", r); !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

func init() {
	childRoles["barrier"] = barrierChild
}

// barrierChild: in each of three rounds one rank (a different one each
// time) sleeps, then creates a file, then enters the barrier; after the
// barrier every rank must see the file.
func barrierChild() error {
	c, err := FromEnv()
	if err != nil {
		return err
	}
	dir := os.Getenv("UCGO_BARRIER_DIR")
	for round := 0; round < 3; round++ {
		name := filepath.Join(dir, fmt.Sprint("arrived-", round))
		if c.Rank() == (c.Size()-1+round)%c.Size() {
			time.Sleep(300 * time.Millisecond)
			if err := os.WriteFile(name, nil, 0o600); err != nil {
				return err
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if _, err := os.Stat(name); err != nil {
			return fmt.Errorf("rank %d left barrier %d before the last rank entered it: %w", c.Rank(), round, err)
		}
	}
	fmt.Printf("rank %d passed 3 barriers\n", c.Rank())
	return c.Finalize()
}

// Barrier waits for every rank in both versions: hydra answers a PMI-2
// kvs-fence at once, so Barrier cannot be the fence alone.
func TestMPIExecBarrier(t *testing.T) {
	for _, v := range []string{"1", "2"} {
		t.Run("pmi"+v, func(t *testing.T) {
			out, err := mpiexec(t, 4, "barrier", 2*time.Minute, nil, "UCGO_PMI="+v, "UCGO_BARRIER_DIR="+t.TempDir())
			if err != nil || strings.Count(string(out), "passed 3 barriers") != 4 {
				t.Fatalf("mpiexec: %v\n%s", err, out)
			}
		})
	}
}
