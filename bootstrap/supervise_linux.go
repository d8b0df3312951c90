package bootstrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// supervisedEnv marks the child that Supervise starts.
const supervisedEnv = "UCGO_SUPERVISED"

// Supervise makes a rank's death by a signal look to the launcher like an
// exit with a status. MPICH's hydra (4.0 at least) ends the whole job when
// one of its processes is killed by a signal, even under
// -disable-auto-cleanup, while a process that exits with a non-zero status
// leaves the others running. Called first thing in main, under a
// launcher, Supervise runs the program again as its child with the same
// arguments, standard files and environment (the connection to the
// process manager in PMI_FD passed on as descriptor 3), forwards SIGINT,
// SIGTERM and SIGHUP to it, and exits with its status, 128+N for a child
// killed by signal N. The child, which the other ranks see (its pid is in
// its worker's address), dies with the supervisor. In the child, and
// without a launcher, Supervise returns at once.
func Supervise() {
	if os.Getenv(supervisedEnv) != "" || !InEnv() {
		return
	}
	code, err := supervise()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap: supervise:", err)
	}
	os.Exit(code)
}

func supervise() (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 1, err
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), supervisedEnv+"=1")
	if v := os.Getenv("PMI_FD"); v != "" {
		fd, err := strconv.Atoi(v)
		if err != nil {
			return 1, fmt.Errorf("PMI_FD=%q: %w", v, err)
		}
		cmd.ExtraFiles = []*os.File{os.NewFile(uintptr(fd), "pmi")}
		cmd.Env = append(cmd.Env, "PMI_FD=3")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 1, err
		}
		return 0, nil
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ee.ExitCode(), nil
}
