package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildBinary builds this command once into a temporary directory that
// TestMain removes.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH to build the perftest binary")
	}
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "perftest-e2e-"); binErr != nil {
			return
		}
		out, err := exec.Command(goTool, "build", "-o", filepath.Join(binDir, "perftest"), ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "perftest")
}

// runBinary runs bin with args and a generous timeout.
func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%q did not finish in 2 minutes; stderr:\n%s", args, e.String())
	}
	return o.String(), e.String(), code
}

// checkJSON checks that out has one plausible JSON result per size of a
// run of 1000 iterations over shm.
func checkJSON(t *testing.T, test string, sizes []int, out string) {
	t.Helper()
	checkRunJSON(t, test, "shm", 1000, sizes, out)
}

// checkRunJSON checks that out has one plausible JSON result per size.
func checkRunJSON(t *testing.T, test, transport string, iters int, sizes []int, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(sizes) {
		t.Fatalf("%s: %d lines for %d sizes:\n%s", test, len(lines), len(sizes), out)
	}
	for i, line := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: line %q: %v", test, line, err)
		}
		if r["test"] != test || r["transport"] != transport || r["size"] != float64(sizes[i]) || r["iterations"] != float64(iters) {
			t.Errorf("%s: line %d identifies %v %v %v %v", test, i, r["test"], r["transport"], r["size"], r["iterations"])
		}
		for _, k := range []string{"lat_median_us", "lat_avg_us", "lat_p99_us", "lat_overall_us", "bw_mbs", "bw_avg_mbs", "msg_rate", "msg_rate_avg"} {
			v, ok := r[k].(float64)
			if !ok || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s size %d: %s = %v, want a positive finite number", test, sizes[i], k, r[k])
			}
		}
		med, p99 := r["lat_median_us"].(float64), r["lat_p99_us"].(float64)
		if p99 < med {
			t.Errorf("%s size %d: p99 %v below the median %v", test, sizes[i], p99, med)
		}
		// Rate × overall latency is 1: one message per iteration, and for
		// ping-pongs both count one-way messages, as ucx_perftest's.
		perMsg := 1e6 / r["msg_rate"].(float64)
		overall := r["lat_overall_us"].(float64)
		if math.Abs(perMsg-overall) > 1e-6*perMsg+1e-9 {
			t.Errorf("%s size %d: 1/msg_rate = %v us, overall latency %v us", test, sizes[i], perMsg, overall)
		}
	}
}

// Every available test runs in local mode (two processes) with short runs
// and prints one plausible JSON line per size.
func TestLocalAllTests(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range tests {
		if tc.available() != nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			sizes := []int{8, 4096}
			if tc.fixedSize > 0 {
				sizes = []int{tc.fixedSize}
			}
			out, errOut, code := runBinary(t, bin, "-l", "-t", tc.name, "-s", "8,4096", "-n", "1000", "-w", "100", "--json")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkJSON(t, tc.name, sizes, out)
		})
	}
}

// Active messages above one fragment (eager fragments, rendezvous).
func TestLocalUCPAMLarge(t *testing.T) {
	bin := buildBinary(t)
	for _, name := range []string{"ucp_am_lat", "ucp_am_bw"} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runBinary(t, bin, "-l", "-t", name, "-s", "8,64k,1m", "-n", "200", "-w", "20", "--json")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkRunJSON(t, name, "shm", 200, []int{8, 64 << 10, 1 << 20}, out)
		})
	}
}

// Sleep wait mode (Arm/Wait) and the table and CSV formats.
func TestLocalSleepTableCSV(t *testing.T) {
	bin := buildBinary(t)
	out, errOut, code := runBinary(t, bin, "-l", "-t", "am_lat", "-E", "sleep", "-e", "peer", "-s", "8,100", "-n", "1000", "-w", "10")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "| typical |  99%ile |") || !strings.Contains(out, "|        8 |         1000 |") ||
		!strings.Contains(out, "|      100 |         1000 |") {
		t.Errorf("table output:\n%s", out)
	}
	// ucp: sleep, peer error mode and wildcard receives.
	for _, name := range []string{"tag_lat", "tag_bw", "ucp_am_bw"} {
		out, errOut, code = runBinary(t, bin, "-l", "-t", name, "-E", "sleep", "-e", "peer", "-C", "-s", "8,4096", "-n", "1000", "-w", "10", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, out, errOut)
		}
		checkJSON(t, name, []int{8, 4096}, out)
	}
	out, errOut, code = runBinary(t, bin, "-l", "-t", "put_bw", "-s", "64", "-n", "1000", "-w", "10", "--csv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "test,transport,size,iterations,") ||
		!strings.HasPrefix(lines[1], "put_bw,shm,64,1000,") {
		t.Errorf("csv: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Every test over rc in local mode: as root between two network
// namespaces, and once over lo as without root. Short runs.
func TestLocalRC(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range tests {
		if tc.available() != nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			sizes := []int{8, 4096}
			if tc.fixedSize > 0 {
				sizes = []int{tc.fixedSize}
			}
			out, errOut, code := runBinary(t, bin, "-l", "-x", "rc", "-t", tc.name, "-s", "8,4096", "-n", "200", "-w", "20", "--json")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkRunJSON(t, tc.name, "rc", 200, sizes, out)
		})
	}
	t.Run("loopback", func(t *testing.T) {
		cmd := exec.Command(bin, "-l", "-x", "rc", "-t", "am_lat", "-s", "8", "-n", "200", "-w", "20", "-E", "sleep")
		cmd.Env = append(os.Environ(), noNetnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "am_lat over rc on lo (sleep, 200 iterations, 20 warm-up)") ||
			!strings.Contains(string(out), "|        8 |          200 |") {
			t.Errorf("%v\n%s", err, out)
		}
	})
}

// Tests, transports and modes that are not built yet say so and exit 1;
// a size the transport cannot carry is a usage error.
func TestLocalUnavailable(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-l", "-x", "rc", "-e", "failover", "--fault", "meltdown@1s"}, 2, "want linkdown, blackhole or flap"},
		{[]string{"-l", "-x", "rc", "-e", "peer", "--fault", "linkdown@1s"}, 2, "--fault needs -l and -e failover"},
		{[]string{"-l", "-t", "am_lat", "-e", "failover"}, 2, "uct never fails over"},
		{[]string{"-l", "-t", "am_lat", "-s", "1m", "-n", "10"}, 2, "exceeds the iface's limit"},
		{[]string{"-l", "-t", "am_lat", "-s", "4", "-n", "10"}, 2, "at least 8 bytes"},
	} {
		out, errOut, code := runBinary(t, bin, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want exit %d and %q", c.args, code, errOut, out, c.code, c.msg)
		}
	}
}

// Under "mpiexec -n 2" (MPICH's hydra, PMI-2 offered and spoken): a uct and a ucp test over
// shm and over rc (every test runs in local mode above; the ranks differ
// only in how they meet).
func TestMPIExec(t *testing.T) {
	mpiexec, err := exec.LookPath("mpiexec")
	if err != nil {
		t.Skip("mpiexec not installed (Debian package mpich)")
	}
	bin := buildBinary(t)
	for _, c := range []struct{ transport, test string }{
		{"shm", "am_lat"}, {"shm", "tag_bw"}, {"rc", "put_bw"}, {"rc", "tag_lat"},
	} {
		t.Run(c.transport+"/"+c.test, func(t *testing.T) {
			out, errOut, code := runBinary(t, mpiexec, "-n", "2", bin, "-x", c.transport, "-t", c.test, "-s", "8,4096", "-n", "200", "-w", "20", "--json")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			checkRunJSON(t, c.test, c.transport, 200, []int{8, 4096}, out)
		})
	}
	// Ranks that disagree on the command line refuse to run.
	out, errOut, code := runBinary(t, mpiexec, "-n", "1", bin, "-t", "am_lat", "-n", "10", ":", "-n", "1", bin, "-t", "am_lat", "-n", "20")
	if code != 2 || !strings.Contains(errOut, "rank 0 runs") || !strings.Contains(errOut, "rank 1 runs") {
		t.Errorf("mismatched ranks: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A server and a client started apart (no -l): with -e peer, SIGKILL of
// the server in the middle of a run ends the client's run with the failed
// operation's status, at uct and ucp level, over shm and rc, rather than
// leaving it waiting.
func TestServerKilled(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct{ transport, test string }{
		{"shm", "put_bw"}, {"shm", "tag_bw"}, {"rc", "put_bw"}, {"rc", "tag_bw"},
	} {
		t.Run(c.transport+"/"+c.test, func(t *testing.T) {
			srv := exec.Command(bin, "-p", "0")
			srvErr, err := srv.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				srv.Process.Kill()
				srv.Wait()
			}()
			rd := bufio.NewReader(srvErr)
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("server: %v", err)
			}
			go io.Copy(io.Discard, rd)
			_, port, _ := net.SplitHostPort(strings.TrimSpace(strings.TrimPrefix(line, "perftest: waiting for a client on ")))
			// The first size ends quickly and prints its line; the second
			// would run for minutes.
			cli := exec.Command(bin, "-x", c.transport, "-t", c.test, "-e", "peer", "-s", "8,1m", "-n", "20000", "-w", "0", "-p", port, "--json", "127.0.0.1")
			var cliErr bytes.Buffer
			cli.Stderr = &cliErr
			out, err := cli.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cli.Start(); err != nil {
				t.Fatal(err)
			}
			defer cli.Process.Kill()
			first, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				cli.Wait()
				t.Fatalf("client printed no result: %v\n%s", err, cliErr.String())
			}
			checkRunJSON(t, c.test, c.transport, 20000, []int{8}, first)
			srv.Process.Kill()
			done := make(chan error, 1)
			go func() { done <- cli.Wait() }()
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("client still running 2 minutes after its server was killed\n%s", cliErr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("client: %v, want exit status 1\n%s", err, cliErr.String())
			}
			// The failed operation's own status: the peer process failed
			// (shm's pidfd, or rc's connection manager link ending without
			// a DREQ), its connection was reset or the QP flushed (rc); or,
			// when the kill lands between two sizes, the exchange
			// connection's end at the barrier.
			msg := cliErr.String()
			named := false
			for _, s := range []string{"peer process failed", "connection reset by remote peer", "operation flushed", "peer closed the connection"} {
				named = named || strings.Contains(msg, s)
			}
			if !named {
				t.Errorf("client's error does not name the peer's failure:\n%s", msg)
			}
		})
	}
}
