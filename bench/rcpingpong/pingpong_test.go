package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
)

var summaryRE = regexp.MustCompile(`(?m)^(\d+) bytes in \d+\.\d\d seconds = \d+\.\d\d Mbit/sec\n(\d+) iters in \d+\.\d\d seconds = \d+\.\d\d usec/iter$`)

// checkSummary checks that out holds rc_pingpong's two summary lines for
// size and iters.
func checkSummary(t *testing.T, who, out string, size, iters int) {
	t.Helper()
	m := summaryRE.FindStringSubmatch(out)
	if m == nil {
		t.Errorf("%s printed no summary:\n%s", who, out)
		return
	}
	if m[1] != strconv.Itoa(2*size*iters) || m[2] != strconv.Itoa(iters) {
		t.Errorf("%s summary says %s bytes, %s iters; want %d, %d", who, m[1], m[2], 2*size*iters, iters)
	}
}

// runPair runs the tool as server in p.A and as client in p.B with the
// same extra arguments and returns both outputs.
func runPair(t *testing.T, p *netns.Pair, port int, args ...string) (srv, cli string) {
	t.Helper()
	common := append([]string{"-g", "0", "-p", strconv.Itoa(port)}, args...)
	var wg sync.WaitGroup
	var so, co bytes.Buffer
	var serr, cerr error
	start := func(ns *netns.NS, out *bytes.Buffer, errp *error, extra ...string) {
		cmd := ns.Command(os.Args[0], append(append([]string{"-a", ns.Addr().String()}, common...), extra...)...)
		cmd.Env = append(os.Environ(), asMainEnv+"=1")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); *errp = cmd.Wait() }()
	}
	start(p.A, &so, &serr)
	start(p.B, &co, &cerr, p.A.Addr().String())
	wg.Wait()
	if serr != nil {
		t.Errorf("server: %v\n%s", serr, so.String())
	}
	if cerr != nil {
		t.Errorf("client: %v\n%s", cerr, co.String())
	}
	return so.String(), co.String()
}

// newPair makes a namespace pair and waits until both veth ends run (a
// fresh veth gets its carrier a moment after it is up; the verbs port is
// down until then).
func newPair(t *testing.T) *netns.Pair {
	t.Helper()
	p, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*netns.NS{p.A, p.B} {
		err := ns.Do(func() error {
			for deadline := time.Now().Add(30 * time.Second); ; {
				ifc, err := net.InterfaceByIndex(ns.Index())
				if err != nil {
					return err
				}
				if ifc.Flags&net.FlagRunning != 0 {
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s: no carrier", ifc.Name)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// TestPingpongNetns runs the tool against itself between two network
// namespaces, with rc_pingpong's defaults and other sizes, MTUs and
// iteration counts, busy polling and with -e.
func TestPingpongNetns(t *testing.T) {
	p := newPair(t)
	for i, c := range []struct {
		size, iters int
		args        []string
	}{
		{4096, 1000, nil},
		{1, 1000, []string{"-s", "1"}},
		{65536, 200, []string{"-s", "65536", "-n", "200"}},
		{4096, 1000, []string{"-m", "4096", "-c"}},
		{8192, 300, []string{"-e", "-s", "8192", "-n", "300", "-r", "16"}},
	} {
		name := strings.Join(c.args, " ")
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			srv, cli := runPair(t, p, 18515+i, c.args...)
			checkSummary(t, "server", srv, c.size, c.iters)
			checkSummary(t, "client", cli, c.size, c.iters)
			r := &caseResult{VM: srv, Host: cli}
			checkAddrs(t, r, "::ffff:"+p.A.Addr().String(), "::ffff:"+p.B.Addr().String())
			if strings.Contains(srv+cli, "invalid data") {
				t.Error("-c found invalid data")
			}
		})
	}
}

// TestPingpongNoGID checks that a peer advertising no GID (rc_pingpong
// without -g) is refused with a message naming the cure.
func TestPingpongNoGID(t *testing.T) {
	p := newPair(t)
	cmd := p.A.Command(os.Args[0], "-a", p.A.Addr().String(), "-p", "18530")
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	var so bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &so
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cli := p.B.Command(os.Args[0], "-a", p.B.Addr().String(), "-p", "18530", p.A.Addr().String())
	cli.Env = cmd.Env
	out, cerr := cli.CombinedOutput()
	serr := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(serr, &ee) || !errors.As(cerr, &ee) {
		t.Fatalf("want both sides to fail: server %v, client %v\n%s\n%s", serr, cerr, so.String(), out)
	}
	if !strings.Contains(so.String(), "run the peer with -g") {
		t.Errorf("server did not say why:\n%s", so.String())
	}
}
