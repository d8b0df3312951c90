package mpitest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
)

const (
	// rankEnv marks a test binary started by mpiexec as a rank; argsEnv
	// holds the program's arguments, separated by spaces.
	rankEnv = "UCGO_MPITEST_RANK"
	argsEnv = "UCGO_MPITEST_ARGS"
	// hostsEnv maps host addresses to namespace paths for the fake ssh:
	// "10.1.2.1=/run/netns/x,10.1.2.2=/run/netns/y".
	hostsEnv = "UCGO_MPITEST_HOSTS"
)

// Main runs the program (run with its arguments and stdout) when the test
// binary was started as a rank, plays ssh when started by mpiexec as its
// launcher, and otherwise runs the tests. Call it from TestMain.
func Main(m *testing.M, run func(args []string, stdout io.Writer) error) {
	if os.Getenv(hostsEnv) != "" && len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
		fakeSSH(os.Args[1:])
	}
	if os.Getenv(rankEnv) != "" {
		if err := onHost(); err != nil {
			fmt.Fprintln(os.Stderr, "rank error:", err)
			os.Exit(1)
		}
		if err := run(strings.Fields(os.Getenv(argsEnv)), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "rank error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeSSH is "ssh [-options] host command...": it execs "sh -c command"
// inside the namespace of host, replacing this process.
func fakeSSH(args []string) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		args = args[1:]
	}
	err := func() error {
		if len(args) < 2 {
			return fmt.Errorf("usage: host command")
		}
		var path string
		for _, hp := range strings.Split(os.Getenv(hostsEnv), ",") {
			if h, p, ok := strings.Cut(hp, "="); ok && h == args[0] {
				path = p
			}
		}
		if path == "" {
			return fmt.Errorf("unknown host %q", args[0])
		}
		cmd := netns.CommandIn(path, "sh", "-c", strings.Join(args[1:], " "))
		if cmd.Err != nil {
			return cmd.Err
		}
		return syscall.Exec(cmd.Path, cmd.Args, os.Environ())
	}()
	fmt.Fprintln(os.Stderr, "fake ssh:", err)
	os.Exit(255)
}

// Env returns the variables that make this test binary, started by some
// other launcher (srun), run the program with args.
func Env(args ...string) []string {
	return []string{rankEnv + "=1", argsEnv + "=" + strings.Join(args, " "), "GORACE=atexit_sleep_ms=0"}
}

// onHost checks that a rank of a job across hosts runs in the namespace
// of its host: rank i on the i-th (hydra places one rank per host).
func onHost() error {
	hosts := os.Getenv(hostsEnv)
	if hosts == "" {
		return nil
	}
	rank, err := strconv.Atoi(os.Getenv("PMI_RANK"))
	if err != nil {
		return fmt.Errorf("PMI_RANK: %w", err)
	}
	list := strings.Split(hosts, ",")
	if rank >= len(list) {
		return fmt.Errorf("rank %d of %d hosts", rank, len(list))
	}
	host, _, _ := strings.Cut(list[rank], "=")
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if p, ok := a.(*net.IPNet); ok && p.IP.String() == host {
			return nil
		}
	}
	return fmt.Errorf("rank %d runs outside its host %s (addresses %v)", rank, host, addrs)
}

// Job is one mpiexec run of the test binary as the program.
type Job struct {
	N     int      // ranks
	Flags []string // mpiexec flags before -n
	Args  []string // the program's arguments (no spaces inside one)
	Env   []string // added to the ranks' environment
	// Star, if set, puts rank i on host Star.NS[i] (N <= len(Star.NS)).
	Star  *netns.Star
	Limit time.Duration // default 2 minutes
}

// Run runs the job and returns its combined output and mpiexec's exit
// code. It skips the test when mpiexec is missing and fails it when the
// job outlives its limit.
func Run(t testing.TB, j Job) (string, int) {
	t.Helper()
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (Debian package mpich)")
	}
	if j.Limit == 0 {
		j.Limit = 2 * time.Minute
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.Limit)
	defer cancel()
	flags := append([]string{}, j.Flags...)
	env := append(os.Environ(), rankEnv+"=1", argsEnv+"="+strings.Join(j.Args, " "), "GORACE=atexit_sleep_ms=0")
	if j.Star != nil {
		if j.N > len(j.Star.NS) {
			t.Fatalf("%d ranks on %d hosts", j.N, len(j.Star.NS))
		}
		var hosts, paths []string
		for _, ns := range j.Star.NS[:j.N] {
			hosts = append(hosts, ns.Addr().String()+":1")
			paths = append(paths, ns.Addr().String()+"="+ns.Path())
		}
		flags = append(flags, "-launcher", "ssh", "-launcher-exec", self, "-hosts", strings.Join(hosts, ","))
		env = append(env, hostsEnv+"="+strings.Join(paths, ","))
	}
	args := append(flags, "-n", fmt.Sprint(j.N), self, "-test.run=^$")
	var cmd *exec.Cmd
	if j.Star != nil {
		cmd = j.Star.NS[0].Command(mpiexec, args...)
	} else {
		cmd = exec.Command(mpiexec, args...)
	}
	cmd.Env = append(env, j.Env...)
	// mpiexec's process group, so that a timeout ends its proxies and
	// ranks too
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("mpiexec %v did not finish in %v:\n%s", args, j.Limit, out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	default:
		t.Fatalf("mpiexec: %v\n%s", err, out.String())
		return "", -1
	}
}

// Lines returns the lines of out that start with prefix.
func Lines(out, prefix string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			ls = append(ls, l)
		}
	}
	return ls
}
