package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ucgo/ucgo/bench/perftest/internal/report"
)

// localServerEnv marks the server process that -l starts; its value is the
// address to listen on.
const localServerEnv = "UCGO_PERFTEST_LOCAL_SERVER"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = profiled(cfg, func() error { return dispatch(cfg, stdout, stderr) })
	}
	if err != nil {
		fmt.Fprintln(stderr, "perftest:", errText(err))
	}
	return exitCode(err)
}

// errText is err's message without the "usage: " marker.
func errText(err error) string { return strings.TrimPrefix(err.Error(), errUsage.Error()+": ") }

// exitCode is 0 for success, 2 for usage errors, else 1.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		return 1
	}
}

func dispatch(cfg *config, stdout, stderr io.Writer) error {
	if cfg.List {
		_, err := fmt.Fprint(stdout, testList())
		return err
	}
	if os.Getenv(foServerEnv) != "" {
		return foServer(cfg, stdout)
	}
	if cfg.Fault != "" {
		return runFailoverLocal(cfg, stdout, stderr)
	}
	if host := os.Getenv(localServerEnv); host != "" {
		return localServer(cfg, host, stdout)
	}
	if inMPI() {
		return runMPI(cfg, stdout, stderr)
	}
	if cfg.Local {
		return runLocal(cfg, stdout, stderr)
	}
	pin(cfg.CPU)
	if cfg.Host != "" {
		if _, err := checkRunnable(cfg); err != nil {
			return err
		}
		ch, err := dial(cfg, cfg.Host, 10*time.Second)
		if err != nil {
			return err
		}
		defer ch.Close()
		return runSide(cfg, ch, true, writer(cfg, stdout), progressOut(stdout))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "perftest: waiting for a client on %s\n", ln.Addr())
	return serve(cfg, ln)
}

func writer(cfg *config, stdout io.Writer) *report.Writer {
	w := &report.Writer{W: stdout, Format: cfg.Format}
	if cfg.Format == report.Table {
		where := ""
		if cfg.where != "" {
			where = " " + cfg.where
		}
		w.Title = fmt.Sprintf("%s over %s%s (%s, %d iterations, %d warm-up)", cfg.Test, cfg.Transport, where, cfg.Wait, cfg.Iters, cfg.Warmup)
	}
	return w
}

// progressOut is stdout when it is a terminal, else nil (no live line).
func progressOut(stdout io.Writer) io.Writer {
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		return f
	}
	return nil
}

// localServer is the server process of -l: it listens on host, port 0,
// tells the parent the port on stdout and serves one client.
func localServer(cfg *config, host string, stdout io.Writer) error {
	pin(cfg.CPU)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "port %d\n", ln.Addr().(*net.TCPAddr).Port)
	return serve(cfg, ln)
}

// runLocal is -l: it starts the server as a second process of this binary
// and runs the client against it, both placed by the transport's local
// plan.
func runLocal(cfg *config, stdout, stderr io.Writer) (err error) {
	if _, err := checkRunnable(cfg); err != nil {
		return err
	}
	tr := findTransport(cfg.Transport)
	plan := localPlan{ListenHost: "127.0.0.1"}
	if tr.local != nil {
		if plan, err = tr.local(cfg); err != nil {
			return fmt.Errorf("local mode for %s: %w", tr.name, err)
		}
	}
	if plan.Cleanup != nil {
		defer func() { err = errors.Join(err, plan.Cleanup()) }()
		// An interrupted run still removes what the plan built.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sigs)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case s := <-sigs:
				_ = plan.Cleanup()
				fmt.Fprintf(stderr, "perftest: %v\n", s)
				os.Exit(130)
			case <-stop:
			}
		}()
	}
	if plan.Note != "" {
		fmt.Fprintln(stderr, "perftest:", plan.Note)
	}
	c := *cfg
	if c.Device == "" {
		c.Device = plan.Device
	}
	c.where = plan.Where
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	clientCPU, serverCPU := c.CPU, -1
	if n := runtime.NumCPU(); n > 1 {
		if clientCPU < 0 {
			clientCPU = 0
		}
		serverCPU = n - 1
		if serverCPU == clientCPU {
			serverCPU = 0
		}
	}
	args := []string{"-c", strconv.Itoa(serverCPU), "-d", c.Device}
	if c.CPUProf != "" {
		args = append(args, "-cpuprofile", c.CPUProf+".server")
	}
	var cmd *exec.Cmd
	if plan.Server != nil {
		cmd = plan.Server(exe, args...)
	} else {
		cmd = exec.Command(exe, args...)
	}
	cmd.Env = append(os.Environ(), localServerEnv+"="+plan.ListenHost)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the server process: %w", err)
	}
	exited := make(chan error, 1)
	defer func() {
		select {
		case werr := <-exited:
			if werr != nil && err == nil {
				err = fmt.Errorf("server process: %w", werr)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			if err == nil {
				err = errors.New("server process did not exit; killed")
			}
		}
	}()
	var line string
	line, err = bufio.NewReader(out).ReadString('\n')
	go func() { exited <- cmd.Wait() }()
	if err != nil {
		return fmt.Errorf("server process did not report its port: %w", err)
	}
	port, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "port "))
	if err != nil {
		return fmt.Errorf("server process said %q: %w", line, err)
	}
	c.Port = port
	client := func() error {
		pin(clientCPU)
		ch, err := dial(&c, plan.ListenHost, 10*time.Second)
		if err != nil {
			return err
		}
		defer ch.Close()
		return runSide(&c, ch, true, writer(&c, stdout), progressOut(stdout))
	}
	if plan.Client != nil {
		return plan.Client(client)
	}
	return client()
}
