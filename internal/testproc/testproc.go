package testproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// RoleEnv names the role a child plays.
const RoleEnv = "UCGO_TEST_ROLE"

var (
	mu    sync.Mutex
	roles = map[string]func() error{}
)

// Register makes fn the role name. Call it before Main (from init or
// TestMain); registering a name twice panics.
func Register(name string, fn func() error) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := roles[name]; dup || name == "" || fn == nil {
		panic(fmt.Sprintf("testproc: bad or duplicate role %q", name))
	}
	roles[name] = fn
}

// Role returns the role this process plays, "" in the parent.
func Role() string { return os.Getenv(RoleEnv) }

// Main is the body of TestMain. In a child it runs the registered role
// and exits: status 0 if the role returned nil, else 1 with the error on
// stderr. In the parent it runs the tests and exits with their status.
func Main(m *testing.M) {
	role := Role()
	if role == "" {
		os.Exit(m.Run())
	}
	mu.Lock()
	fn := roles[role]
	mu.Unlock()
	if fn == nil {
		fmt.Fprintf(os.Stderr, "child: no role %q (known: %s)\n", role, known())
		os.Exit(1)
	}
	if err := fn(); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func known() string {
	mu.Lock()
	defer mu.Unlock()
	var names []string
	for n := range roles {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// Spec says how to start a child.
type Spec struct {
	Role string
	// Env is added to the parent's environment.
	Env []string
	// Cmd, if set, is the command to start (it must run this test
	// binary, os.Executable(), with Args); Start sets its environment
	// and standard streams. Use it to run the child elsewhere, such as
	// in a network namespace (netns.NS.Command).
	Cmd *exec.Cmd
}

// Args are the test binary's arguments for a child: run no test.
var Args = []string{"-test.run=^$"}

// Child is a running child process.
type Child struct {
	Cmd    *exec.Cmd
	Stdin  *os.File      // the write end of the child's stdin
	Stdout *bufio.Reader // the child's stdout

	waitOnce sync.Once
	waited   chan struct{} // closed when the waiter started by Wait is done
	waitErr  error
}

// Start starts this test binary as a child playing s.Role. The child's
// stderr is the parent's. When t ends, the child's stdin is closed, the
// child is killed and reaped, and any data race it reported fails t.
func Start(t testing.TB, s Spec) *Child {
	t.Helper()
	cmd := s.Cmd
	if cmd == nil {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(self, Args...)
	}
	cmd.Env = append(os.Environ(), RoleEnv+"="+s.Role)
	raceLogs := raceLogPrefix(t)
	cmd.Env = append(cmd.Env, "GORACE="+childGORACE(os.Getenv("GORACE"), raceLogs))
	cmd.Env = append(cmd.Env, s.Env...)
	cmd.Stderr = os.Stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = inR
	out, err := cmd.StdoutPipe()
	if err != nil {
		inR.Close()
		inW.Close()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		t.Fatalf("start child %s: %v", s.Role, err)
	}
	inR.Close()
	c := &Child{Cmd: cmd, Stdin: inW, Stdout: bufio.NewReader(out), waited: make(chan struct{})}
	t.Cleanup(func() {
		inW.Close()
		cmd.Process.Kill()
		started := true
		c.waitOnce.Do(func() { started = false })
		if started {
			<-c.waited
		} else {
			cmd.Wait()
		}
		reportRaces(t, s.Role, raceLogs)
	})
	return c
}

// ErrTimeout is returned by Scan and Wait when the child took too long.
var ErrTimeout = errors.New("testproc: child did not answer in time")

// Scan reads space-separated values from the child's stdout into args
// (fmt.Fscan). If they do not come within d, it kills the child and
// returns an error wrapping ErrTimeout.
func (c *Child) Scan(d time.Duration, args ...any) error {
	done := make(chan error, 1)
	go func() {
		_, err := fmt.Fscan(c.Stdout, args...)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		c.Cmd.Process.Kill()
		<-done // the read ends when the child's stdout closes
		return fmt.Errorf("read from child after %v: %w", d, ErrTimeout)
	}
}

// Wait waits for the child to exit and returns its exit error. If it has
// not exited within d, Wait returns an error wrapping ErrTimeout (the
// child is killed at cleanup); Wait may then be called again. Do not mix
// Wait with Cmd.Wait.
func (c *Child) Wait(d time.Duration) error {
	c.waitOnce.Do(func() {
		go func() {
			c.waitErr = c.Cmd.Wait()
			close(c.waited)
		}()
	})
	select {
	case <-c.waited:
		return c.waitErr
	case <-time.After(d):
		return fmt.Errorf("child exit after %v: %w", d, ErrTimeout)
	}
}

// Kill SIGKILLs the child.
func (c *Child) Kill() error { return c.Cmd.Process.Kill() }
