package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/testproc"
)

// The test binary stands in for the tools when fakeToolEnv is set: it
// appends "role policy priority" lines to the file the variable names.
const (
	fakeToolEnv = "UCGO_COMPARE_FAKE_TOOL"
	fakeRoleEnv = "UCGO_COMPARE_FAKE_ROLE" // "child", "hang", "hang-child", "nopriv"
)

func TestMain(m *testing.M) {
	if file := os.Getenv(fakeToolEnv); file != "" {
		os.Exit(fakeTool(file, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeTool plays perftest -l (which starts a child, as perftest's server
// is), a ucx_perftest server or client, or compare itself without the
// privilege to set real-time priority.
func fakeTool(file string, args []string) int {
	role := os.Getenv(fakeRoleEnv)
	if role == "nopriv" {
		// No real-time priority from a resource limit either.
		if err := unix.Setrlimit(unix.RLIMIT_RTPRIO, &unix.Rlimit{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		return run([]string{"-rt", "-o", "/nonexistent/out", "-no-install", "-ucx", "/nonexistent/ucx_perftest"}, os.Stdout, os.Stderr)
	}
	flagValue := func(name string) string {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == name {
				return args[i+1]
			}
		}
		return ""
	}
	switch {
	case role == "child":
		return record(file, "perftest-child")
	case role == "hang-child":
		if err := appendLine(file, strconv.Itoa(os.Getpid())); err != nil {
			return 3
		}
		time.Sleep(time.Hour)
		return 0
	case len(args) > 0 && args[0] == "-l":
		if rc := record(file, "perftest"); rc != 0 {
			return rc
		}
		childRole := "child"
		if role == "hang" {
			childRole = "hang-child"
		}
		exe, _ := os.Executable()
		child := exec.Command(exe)
		child.Env = append(os.Environ(), fakeRoleEnv+"="+childRole)
		child.Stderr = os.Stderr
		if err := child.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 3
		}
		fmt.Printf("{\"test\":%q,\"size\":%s,\"iterations\":10,\"lat_median\":1}\n", flagValue("-t"), flagValue("-s"))
		return 0
	case len(args) > 0 && args[0] == "127.0.0.1":
		if rc := record(file, "ucx-client"); rc != 0 {
			return rc
		}
		c, err := net.Dial("tcp", "127.0.0.1:"+flagValue("-p"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		c.Close()
		out, err := os.ReadFile(filepath.Join("testdata", "ucp_tag_lat_shm_fv.txt"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		os.Stdout.Write(out)
		return 0
	default: // ucx_perftest server
		if rc := record(file, "ucx-server"); rc != 0 {
			return rc
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+flagValue("-p"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		c, err := ln.Accept()
		if err != nil {
			return 3
		}
		c.Close()
		return 0
	}
}

// record appends this process's role, scheduling policy and priority.
func record(file, role string) int {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sched_getattr:", err)
		return 3
	}
	if err := appendLine(file, fmt.Sprintf("%s %d %d", role, a.Policy, a.Priority)); err != nil {
		return 3
	}
	return 0
}

func appendLine(file, line string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.WriteString(f, line+"\n")
	return err
}

// rtLauncher is the launcher of -rt, or a skip where this host cannot
// give it.
func rtLauncher(t *testing.T) *launcher {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("-rt needs root (or CAP_SYS_NICE); skipping the real-time runs")
	}
	l, err := newLauncher(true)
	if err != nil {
		t.Skipf("this host cannot run real-time processes: %v", err)
	}
	return l
}

// TestRTPolicy: under -rt, every process of both tools runs at SCHED_RR
// priority 1: perftest and the process it starts, ucx_perftest's server
// and its client. The test binary plays the tools through the real
// runners.
func TestRTPolicy(t *testing.T) {
	l := rtLauncher(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "policies")
	t.Setenv(fakeToolEnv, file)
	ctx := context.Background()
	tagLat, shm := findTestMap("tag_lat"), findTransportMap("shm")

	ours := &oursRunner{path: exe, timeout: time.Minute, launch: l}
	if _, err := ours.run(ctx, tagLat, shm, 8, 10, 1, 1); err != nil {
		t.Fatalf("ours: %v", err)
	}
	ucx := &ucxRunner{path: exe, cpus: [2]int{-1, -1}, timeout: time.Minute, launch: l}
	if _, err := ucx.run(ctx, tagLat, shm, "", 8, 10, 1, 1); err != nil {
		t.Fatalf("UCX: %v", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d %d", unix.SCHED_RR, 1)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		role, pol, _ := strings.Cut(line, " ")
		seen[role] = true
		if pol != want {
			t.Errorf("%s ran with policy and priority %q, want %q (SCHED_RR 1)", role, pol, want)
		}
	}
	for _, role := range []string{"perftest", "perftest-child", "ucx-server", "ucx-client"} {
		if !seen[role] {
			t.Errorf("no record of %s among:\n%s", role, b)
		}
	}
}

// TestRTNeedsDeadline: under -rt no tool process starts without a time
// limit.
func TestRTNeedsDeadline(t *testing.T) {
	l := &launcher{chrt: "/usr/bin/chrt"}
	if _, err := l.command(context.Background(), "true"); !errors.Is(err, errNoDeadline) {
		t.Errorf("command without a deadline: %v, want errNoDeadline", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := l.command(ctx, "true"); err != nil {
		t.Errorf("command with a deadline: %v", err)
	}
}

// TestRTTimeoutKillsGroup: a run under -rt that hangs ends at its time
// limit, and so does the process the tool started.
func TestRTTimeoutKillsGroup(t *testing.T) {
	l := rtLauncher(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "pids")
	t.Setenv(fakeToolEnv, file)
	t.Setenv(fakeRoleEnv, "hang")
	ours := &oursRunner{path: exe, timeout: 2 * time.Second, launch: l}
	_, err = ours.run(context.Background(), findTestMap("tag_lat"), findTransportMap("shm"), 8, 10, 1, 1)
	if err == nil || !strings.Contains(err.Error(), "timed out after 2s") {
		t.Fatalf("hanging run: %v, want a time-out", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	pid, err := strconv.Atoi(lines[len(lines)-1])
	if err != nil {
		t.Fatalf("no pid of the child in %q", b)
	}
	// Killed and reaped by init: gone within a generous bound.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || childGone(string(st)) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the tool's child %d outlived the run's time limit: %s", pid, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childGone says whether a /proc/<pid>/stat line is of a dead process
// (zombie or exiting).
func childGone(stat string) bool {
	i := strings.LastIndex(stat, ")")
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	return stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// TestRTRefusedWithoutPrivilege: compare -rt run as nobody, without any
// capability or RLIMIT_RTPRIO, stops at once with the reason.
func TestRTRefusedWithoutPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as nobody")
	}
	if _, err := exec.LookPath("chrt"); err != nil {
		t.Skip("chrt (util-linux) is not installed")
	}
	copyExe := testproc.ExecutableForNobody(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, copyExe)
	cmd.Dir = filepath.Dir(copyExe)
	cmd.Env = append(os.Environ(), fakeToolEnv+"=/dev/null", fakeRoleEnv+"=nopriv")
	testproc.AsNobody(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("compare -rt as nobody: %v, want exit status 1; stderr:\n%s", err, &stderr)
	}
	for _, want := range []string{"compare: -rt: cannot run the tools at real-time priority", "CAP_SYS_NICE"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, &stderr)
		}
	}
	if strings.Contains(stderr.String(), "ucx_perftest") {
		t.Errorf("-rt was not checked first:\n%s", &stderr)
	}
}

// TestCompareRTSmoke runs compare -rt with both real tools on one test and
// size: the table and results.json say the run was real-time.
func TestCompareRTSmoke(t *testing.T) {
	requireTools(t)
	rtLauncher(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-rt", "-t", "tag_lat", "-x", "shm", "-s", "8", "-n", "300", "-w", "10", "-r", "1", "-timeout", "1m", "-o", out, "-no-install"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit status %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	for _, want := range []string{"Both tools ran at real-time priority (-rt: SCHED_RR 1).", "| tag_lat | 8 | 300 | 1 |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, &stdout)
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
	if !res.RealTime {
		t.Errorf("results.json does not record -rt:\n%s", b)
	}
}
