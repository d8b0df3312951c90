package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// vmCase is one interop case of a VM boot: a VM side and a host side that
// run at the same time and meet over TCP and RoCE. The cases of one boot
// run in order on both sides, so a case must end on its own (wrap VM
// tools in timeout: with rxe's retry_cnt 7 a lost peer is retried
// forever) and use TCP ports of its own.
type vmCase struct {
	name string
	// vm is run by busybox sh inside the VM (in a subshell, cwd /root).
	vm string
	// host is run by bash in the host netns (RXEVM_* set, see run.sh);
	// "" means the case has no host side. It is killed after hostLimit
	// (default 60 s).
	host      string
	hostLimit time.Duration
	// check judges the case; its output is in r.
	check func(t *testing.T, r *caseResult)
}

// caseResult is what both sides of a case printed and how they exited.
// An RC of -1 means that side never finished (the VM powered off or the
// run ended first).
type caseResult struct {
	VM     string // the VM's console lines between the case's markers
	VMRC   int
	Host   string // the host side's stdout and stderr
	HostRC int
}

// vmBoot is one VM boot running several cases.
type vmBoot struct {
	name    string
	timeout int      // run.sh -t, seconds
	mtu     int      // run.sh --mtu; 0 for the default (1500)
	files   []string // run.sh -f SRC:DST
	cases   []vmCase
}

// pcapEnv names an environment variable holding a file name: when set,
// every packet on the VM's link is captured into it (run.sh -p).
const pcapEnv = "UCGO_RXE_PCAP"

var caseEndRE = regexp.MustCompile(`^CASE-END (\S+) rc=(\d+)`)

// runBoot boots the VM once and runs b's cases, then runs each case's
// check as a subtest. The serial log and the host outputs are read from
// files, so the two sides' lines never interleave.
func runBoot(t *testing.T, harness, cache string, b vmBoot) {
	t.Helper()
	dir := t.TempDir()
	var vm, host strings.Builder
	vm.WriteString("cd /root\n")
	host.WriteString("#!/bin/bash\ncd " + dir + "\n")
	for _, c := range b.cases {
		fmt.Fprintf(&vm, "echo 'CASE-BEGIN %s'\n(\n%s\n)\necho \"CASE-END %s rc=$?\"\n", c.name, c.vm, c.name)
		if c.host == "" {
			continue
		}
		body := filepath.Join(dir, c.name+".host.sh")
		if err := os.WriteFile(body, []byte(c.host+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		limit := c.hostLimit
		if limit == 0 {
			limit = 60 * time.Second
		}
		fmt.Fprintf(&host, "timeout -k 3 %d bash %q > %q 2>&1; echo $? > %q\n",
			int(limit.Seconds()), body, filepath.Join(dir, c.name+".host.out"), filepath.Join(dir, c.name+".host.rc"))
	}
	vmScript := filepath.Join(dir, "cases.sh")
	if err := os.WriteFile(vmScript, []byte(vm.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	hostScript := filepath.Join(dir, "host.sh")
	if err := os.WriteFile(hostScript, []byte(host.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "console.log")
	args := []string{"-t", strconv.Itoa(b.timeout), "-q", "-l", logFile, "-f", vmScript + ":/root/cases.sh", "-H", "bash " + hostScript}
	if b.mtu != 0 {
		args = append(args, "--mtu", strconv.Itoa(b.mtu))
	}
	for _, f := range b.files {
		args = append(args, "-f", f)
	}
	if pcap := os.Getenv(pcapEnv); pcap != "" {
		args = append(args, "-p", pcap)
		t.Logf("%s: capturing the boot's link into %s", pcapEnv, pcap)
	}
	args = append(args, "sh /root/cases.sh")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(b.timeout+60)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(harness, "run.sh"), args...)
	// Past the deadline, SIGTERM lets run.sh stop the VM and the host
	// side and remove its netns; whatever still holds its output a while
	// later (an orphaned QEMU or host command) no longer holds up Wait.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	// A netns and tap of our own, so that a run of the harness by someone
	// else on this machine does not hold our lock.
	id := os.Getpid() % 100000
	cmd.Env = append(os.Environ(), "RXEVM_CACHE="+cache,
		fmt.Sprintf("RXEVM_NETNS=ucgorxe%d", id), fmt.Sprintf("RXEVM_TAP=ucgotap%d", id))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	console, _ := os.ReadFile(logFile)
	t.Logf("boot %s: run.sh %v after %v\n%s", b.name, err, time.Since(start).Round(time.Millisecond), out.String())
	res := parseConsole(strings.ReplaceAll(string(console), "\r", ""), b.cases)
	for _, c := range b.cases {
		r := res[c.name]
		if c.host != "" {
			h, _ := os.ReadFile(filepath.Join(dir, c.name+".host.out"))
			r.Host = string(h)
			r.HostRC = -1
			if rc, err := os.ReadFile(filepath.Join(dir, c.name+".host.rc")); err == nil {
				if v, err := strconv.Atoi(strings.TrimSpace(string(rc))); err == nil {
					r.HostRC = v
				}
			}
		}
		t.Run(c.name, func(t *testing.T) {
			t.Logf("VM side (rc %d):\n%s\nhost side (rc %d):\n%s", r.VMRC, r.VM, r.HostRC, r.Host)
			c.check(t, r)
		})
	}
}

// parseConsole cuts the serial log into the cases' sections.
func parseConsole(console string, cases []vmCase) map[string]*caseResult {
	res := map[string]*caseResult{}
	for _, c := range cases {
		res[c.name] = &caseResult{VMRC: -1, HostRC: -1}
	}
	var cur *caseResult
	var sec strings.Builder
	for _, l := range strings.Split(console, "\n") {
		if name, ok := strings.CutPrefix(l, "CASE-BEGIN "); ok {
			cur = res[strings.TrimSpace(name)]
			sec.Reset()
			continue
		}
		if m := caseEndRE.FindStringSubmatch(l); m != nil {
			if r := res[m[1]]; r != nil {
				r.VM = sec.String()
				r.VMRC, _ = strconv.Atoi(m[2])
			}
			cur = nil
			continue
		}
		if cur != nil {
			sec.WriteString(l)
			sec.WriteByte('\n')
		}
	}
	if cur != nil { // a case cut short keeps what it printed
		cur.VM = sec.String()
	}
	return res
}

// wantExit fails the test unless both sides of the case exited 0.
func wantExit(t *testing.T, r *caseResult, hostToo bool) {
	t.Helper()
	if r.VMRC != 0 {
		t.Errorf("VM side exited %d, want 0", r.VMRC)
	}
	if hostToo && r.HostRC != 0 {
		t.Errorf("host side exited %d, want 0", r.HostRC)
	}
}

// retryClient is a VM shell loop that runs cmd until it stops failing to
// connect (status 1, the peer not listening yet), at most n times; $rc
// holds the last status.
func retryClient(cmd string, n int) string {
	return fmt.Sprintf(`n=0
while :; do
  %s
  rc=$?
  [ $rc = 1 ] || break
  n=$((n+1)); [ $n -ge %d ] && break
  sleep 0.3
done
echo "client rc=$rc"`, cmd, n)
}
