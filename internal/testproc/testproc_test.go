package testproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func init() {
	Register("echo", func() error {
		fmt.Println("ready")
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil {
			return err
		}
		fmt.Println(strings.ToUpper(strings.TrimSpace(line)), os.Getenv("TESTPROC_X"))
		return nil
	})
	Register("fail", func() error { return errors.New("role failed") })
	Register("hang", func() error { time.Sleep(time.Hour); return nil })
}

func TestMain(m *testing.M) { Main(m) }

func TestEchoRole(t *testing.T) {
	c := Start(t, Spec{Role: "echo", Env: []string{"TESTPROC_X=x1"}})
	var ready string
	if err := c.Scan(60*time.Second, &ready); err != nil || ready != "ready" {
		t.Fatalf("first line %q, %v", ready, err)
	}
	fmt.Fprintln(c.Stdin, "hello")
	var got, env string
	if err := c.Scan(60*time.Second, &got, &env); err != nil || got != "HELLO" || env != "x1" {
		t.Fatalf("reply %q %q, %v", got, env, err)
	}
	if err := c.Wait(60 * time.Second); err != nil {
		t.Fatalf("child exit: %v", err)
	}
}

func TestFailingRoleExitsNonZero(t *testing.T) {
	c := Start(t, Spec{Role: "fail"})
	if err := c.Wait(60 * time.Second); err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("a failing role exited with %v, want an exit error", err)
	}
}

func TestUnknownRoleExitsNonZero(t *testing.T) {
	c := Start(t, Spec{Role: "no-such-role"})
	if err := c.Wait(60 * time.Second); err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("an unknown role exited with %v, want an exit error", err)
	}
}

// TestBoundedWaits: a child that never answers fails Scan and Wait with
// ErrTimeout instead of hanging, and is killed.
func TestBoundedWaits(t *testing.T) {
	c := Start(t, Spec{Role: "hang"})
	if err := c.Wait(50 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Wait on a hanging child = %v, want ErrTimeout", err)
	}
	var s string
	if err := c.Scan(50*time.Millisecond, &s); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Scan from a silent child = %v, want ErrTimeout", err)
	}
	if err := c.Wait(60 * time.Second); err == nil {
		t.Fatal("the killed child exited cleanly")
	}
}

// TestCleanupKillsChild: a child still running when its test ends is
// killed and reaped.
func TestCleanupKillsChild(t *testing.T) {
	var c *Child
	t.Run("inner", func(t *testing.T) {
		c = Start(t, Spec{Role: "hang"})
	})
	if c.Cmd.ProcessState == nil {
		t.Fatal("child not reaped at cleanup")
	}
	if c.Cmd.ProcessState.Success() {
		t.Fatal("child not killed at cleanup")
	}
}
