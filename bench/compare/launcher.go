package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// errNoRT: -rt was asked for where this process cannot give its tools
// real-time priority.
var errNoRT = errors.New("-rt: cannot run the tools at real-time priority")

// errNoDeadline: a run under -rt was about to start without a time limit.
var errNoDeadline = errors.New("a real-time run needs a time limit")

// rtPriority is the SCHED_RR priority of the tools under -rt: the lowest
// real-time one, above every ordinary process and below every kernel
// thread that runs at real-time priority.
const rtPriority = "1"

// launcher makes the commands of both tools' processes, so that both get
// the same treatment.
type launcher struct {
	// chrt is the path of chrt under -rt ("" without it): each tool is
	// run as `chrt --rr 1 tool args...`; chrt sets SCHED_RR and execs the
	// tool in place, so the process compare waits for and kills is the
	// tool itself, and the processes the tool starts inherit the policy.
	chrt string
}

// newLauncher returns the launcher of a run of compare. With rt it checks,
// once, that a process started by it can run at SCHED_RR priority 1, and
// says why not.
func newLauncher(rt bool) (*launcher, error) {
	if !rt {
		return &launcher{}, nil
	}
	chrt, err := exec.LookPath("chrt")
	if err != nil {
		return nil, fmt.Errorf("%w: chrt (util-linux) is not installed: %w", errNoRT, err)
	}
	if err := checkRT(chrt); err != nil {
		return nil, err
	}
	return &launcher{chrt: chrt}, nil
}

// checkRT runs the wrapper once on chrt itself: `chrt --rr 1 chrt --pid 0`
// prints the policy it runs under. It fails without root or CAP_SYS_NICE
// (and without an RLIMIT_RTPRIO of at least 1), or where the cgroup has
// no real-time budget.
func checkRT(chrt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, chrt, "--rr", rtPriority, chrt, "--pid", "0").CombinedOutput()
	if err == nil && !strings.Contains(string(out), "SCHED_RR") {
		err = errors.New("the probe did not run under SCHED_RR")
	}
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%w (run compare as root or with CAP_SYS_NICE, or drop -rt): %s", errNoRT, msg)
	}
	return nil
}

// rt says whether the tools run at real-time priority.
func (l *launcher) rt() bool { return l.chrt != "" }

// command is exec.CommandContext for one tool process. Under -rt, ctx
// must have a deadline (a real-time process that spins would hold its CPU
// until the kernel's real-time throttling steps in), the process gets its
// own process group, and when ctx ends the whole group is killed: the
// processes the tool started (perftest -l's server) as well.
func (l *launcher) command(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	if !l.rt() {
		return exec.CommandContext(ctx, name, args...), nil
	}
	if _, ok := ctx.Deadline(); !ok {
		return nil, fmt.Errorf("%s: %w", name, errNoDeadline)
	}
	cmd := exec.CommandContext(ctx, l.chrt, append([]string{"--rr", rtPriority, name}, args...)...)
	killGroupOnCancel(cmd)
	// Output pipes held open by a killed tool's children do not keep
	// Wait waiting.
	cmd.WaitDelay = 5 * time.Second
	return cmd, nil
}

// runEnded says why a run's context ended: its time limit, or the end of
// compare (an interrupt).
func runEnded(ctx context.Context, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v", timeout)
	}
	return fmt.Errorf("stopped: %w", ctx.Err())
}
