package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// errNoUCX: ucx_perftest is missing and could not be installed.
var errNoUCX = errors.New("ucx_perftest not found")

// findUCX returns the path of ucx_perftest. When it is missing and we are
// root and may install, it installs Debian's ucx-utils with apt-get.
func findUCX(name string, install bool, log io.Writer) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if name != "ucx_perftest" {
		return "", fmt.Errorf("%w: %s", errNoUCX, name)
	}
	if !install || os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: install it with `sudo apt-get install ucx-utils` (Debian, Ubuntu), or run compare as root to let it do so", errNoUCX)
	}
	fmt.Fprintln(log, "compare: ucx_perftest is missing; installing ucx-utils with apt-get")
	for _, argv := range [][]string{{"apt-get", "update", "-qq"}, {"apt-get", "install", "-y", "-qq", "--no-install-recommends", "ucx-utils"}} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%w: %s: %w\n%s", errNoUCX, strings.Join(argv, " "), err, out)
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w after installing ucx-utils: %w", errNoUCX, err)
	}
	return p, nil
}

// ucxVersion is the first line of `ucx_info -v` ("# Version 1.13.1"), or
// "" when ucx_info is missing.
func ucxVersion() string {
	out, err := exec.Command("ucx_info", "-v").Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "#"))
}

// ucxRunner runs ucx_perftest as a server and a client on this host.
type ucxRunner struct {
	path    string
	cpus    [2]int // client, server; -1: no pinning
	timeout time.Duration
	launch  *launcher
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// run runs one test at one size with one layout ("" for ucp tests). It
// returns the figures, or a *ucxError when ucx_perftest refused. Server
// and client together take at most u.timeout.
func (u *ucxRunner) run(ctx context.Context, t *testMap, tr *transportMap, layout string, size, iters, warmup, window int) (figures, error) {
	port, err := freePort()
	if err != nil {
		return figures{}, err
	}
	side, env := t.ucxSideArgs(tr)
	env = append(os.Environ(), env...)
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()

	srvArgs := append(append([]string(nil), side...), "-p", strconv.Itoa(port))
	if u.cpus[1] >= 0 {
		srvArgs = append(srvArgs, "-c", strconv.Itoa(u.cpus[1]))
	}
	srv, err := u.launch.command(ctx, u.path, srvArgs...)
	if err != nil {
		return figures{}, err
	}
	srv.Env = env
	var srvOut bytes.Buffer
	srv.Stdout = &srvOut
	srv.Stderr = &srvOut
	if err := srv.Start(); err != nil {
		return figures{}, fmt.Errorf("start ucx_perftest server: %w", err)
	}
	srvDone := make(chan struct{}) // closed when the server has exited
	var srvErr error
	go func() { srvErr = srv.Wait(); close(srvDone) }()
	stopServer := func() error {
		select {
		case <-srvDone:
			return srvErr
		case <-time.After(5 * time.Second):
			_ = srv.Process.Kill()
			<-srvDone
			return errors.New("killed")
		}
	}
	// The server's "Waiting for connection" sits in its stdio buffer when
	// stdout is a pipe, and a probe connection would be taken for the
	// client; so wait until the kernel lists the port as listening.
	if err := waitListening(port, srvDone, 10*time.Second); err != nil {
		_ = srv.Process.Kill()
		werr := stopServer()
		return figures{}, fmt.Errorf("ucx_perftest server did not start (%w, %v): %s", err, werr, strings.TrimSpace(srvOut.String()))
	}

	cliArgs := append(append([]string{"127.0.0.1"}, side...),
		"-p", strconv.Itoa(port), "-t", t.ucx, "-s", strconv.Itoa(size),
		"-n", strconv.Itoa(iters), "-w", strconv.Itoa(warmup), "-f", "-v")
	if layout != "" {
		cliArgs = append(cliArgs, "-D", layout)
	}
	if !t.lat && t.fixed == 0 && window > 0 {
		cliArgs = append(cliArgs, "-O", strconv.Itoa(window))
	}
	if u.cpus[0] >= 0 {
		cliArgs = append(cliArgs, "-c", strconv.Itoa(u.cpus[0]))
	}
	cli, err := u.launch.command(ctx, u.path, cliArgs...)
	if err != nil {
		_ = srv.Process.Kill()
		_ = stopServer()
		return figures{}, err
	}
	cli.Env = env
	out, cerr := cli.CombinedOutput()
	// The server ends with its client; when the client failed early it
	// may wait for a peer that never comes.
	if cerr != nil {
		_ = srv.Process.Kill()
	}
	_ = stopServer()
	fig, perr := parseUCX(out)
	if perr == nil {
		return fig, nil
	}
	var ue *ucxError
	if errors.As(perr, &ue) {
		return figures{}, perr
	}
	if ctx.Err() != nil {
		return figures{}, fmt.Errorf("ucx_perftest %s: %w", strings.Join(cliArgs, " "), runEnded(ctx, u.timeout))
	}
	return figures{}, fmt.Errorf("ucx_perftest %s: %v: %w\n%s", strings.Join(cliArgs, " "), cerr, perr, out)
}

// waitListening polls /proc/net/tcp{,6} until a socket listens on port.
func waitListening(port int, exited <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			if b, err := os.ReadFile(f); err == nil && listensOn(b, port) {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("server exited")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d not listening after %v", port, limit)
		}
	}
}

// listensOn says whether a /proc/net/tcp table has a LISTEN socket (state
// 0A) on port.
func listensOn(table []byte, port int) bool {
	suffix := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[3] == "0A" && strings.HasSuffix(f[1], suffix) {
			return true
		}
	}
	return false
}
