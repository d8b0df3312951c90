package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the tool: with this variable set, TestMain runs
// main() with the remaining arguments (used as run.sh's host command).
const asMainEnv = "UCGO_RCPINGPONG_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	if role := os.Getenv(rxePeerRoleEnv); role != "" {
		runRxePeerRole(role)
	}
	os.Exit(m.Run())
}

// rxeHarness returns the rxe-vm harness directory (../shared/tools/rxe-vm
// relative to the repository root) or skips the test.
func rxeHarness(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod above %s", wd)
		}
		root = parent
	}
	// ../shared/tools/rxe-vm from the repository root; a git worktree
	// one level deeper (e.g. wt/NAME) finds it further up.
	want := filepath.Join(filepath.Dir(root), "shared", "tools", "rxe-vm")
	dir := ""
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		c := filepath.Join(d, "shared", "tools", "rxe-vm")
		if _, err := os.Stat(filepath.Join(c, "run.sh")); err == nil {
			dir = c
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if dir == "" {
		t.Skipf("rxe-vm harness not found at %s: interop with Linux soft-RoCE not tested", want)
	}
	if os.Geteuid() != 0 {
		t.Skip("rxe-vm harness needs root (netns, tap): interop with Linux soft-RoCE not tested")
	}
	return dir
}

// rxeCache returns RXEVM_CACHE, or a folder under the user cache dir when it
// is unset (the harness folder itself may be read-only), and builds the VM
// image there if it is missing.
func rxeCache(t *testing.T, harness string) string {
	t.Helper()
	cache := os.Getenv("RXEVM_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(base, "ucgo-rxevm")
	}
	// run.sh (under set -e -o pipefail) fails with status 2 when its
	// log folder is empty: give it one file to list.
	if err := os.MkdirAll(filepath.Join(cache, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	ph := filepath.Join(cache, "logs", "run-00000000-placeholder.log")
	if err := os.WriteFile(ph, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cache, "out", "initramfs.cpio.gz")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(harness, "build.sh"))
		cmd.Env = append(os.Environ(), "RXEVM_CACHE="+cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build.sh: %v\n%s", err, out)
		}
	}
	return cache
}

// selfCmd is a shell command running this test binary as the tool.
func selfCmd(args string) string {
	return fmt.Sprintf("%s=1 %q %s", asMainEnv, os.Args[0], args)
}

var addrRE = regexp.MustCompile(`(local|remote) address:\s+LID 0x([0-9a-f]+), QPN 0x([0-9a-f]+), PSN 0x([0-9a-f]+), GID (\S+)`)

type seenAddr struct{ which, qpn, psn, gid string }

// addrLines returns the address lines of the lines of out that pass keep.
func addrLines(out string, keep func(line string) bool) []seenAddr {
	var r []seenAddr
	for _, l := range strings.Split(out, "\n") {
		if !keep(l) {
			continue
		}
		if m := addrRE.FindStringSubmatch(l); m != nil {
			r = append(r, seenAddr{which: m[1], qpn: m[3], psn: m[4], gid: m[5]})
		}
	}
	return r
}

// padHex left-pads a hex number with zeros (or trims them) to width n.
func padHex(h string, n int) string {
	h = strings.TrimLeft(h, "0")
	for len(h) < n {
		h = "0" + h
	}
	return h
}

// checkPerftestServer checks that a perftest bandwidth server in the VM ran
// its whole TCP protocol with our client role and exited 0.
func checkPerftestServer(t *testing.T, r *caseResult) {
	wantExit(t, r, true)
	if !strings.Contains(r.Host, "PERFTEST-CLIENT-OK") {
		t.Error("our perftest client role did not go through every step")
	}
	// The VM printed our key and GID, and our bandwidth report.
	for _, re := range []string{
		`remote address: LID 0000 QPN 0x0055 PSN 0x424242( OUT 0x01)? RKey 0x00abcd VAddr 0x007f1234560000`,
		`GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01`,
		`\b65536\s+5000\s+1234\.50\s+1234\.50\s+0\.019753`,
	} {
		if !regexp.MustCompile(re).MatchString(r.VM) {
			t.Errorf("VM output lacks %s", re)
		}
	}
	// We parsed the VM's key: its QPN and rkey as the VM printed them.
	m := regexp.MustCompile(`local addres.*?QPN 0x([0-9a-f]+) PSN 0x([0-9a-f]+)(?: OUT 0x[0-9a-f]+)? RKey 0x([0-9a-f]+)`).FindStringSubmatch(strings.ReplaceAll(r.VM, "\n", " "))
	if m == nil {
		t.Fatal("no local address line from the VM")
	}
	ours := regexp.MustCompile(`perftest keys: remote .*`).FindString(r.Host)
	for _, v := range []string{"QPN 0x" + padHex(m[1], 6), "PSN 0x" + padHex(m[2], 6), "RKey 0x" + padHex(m[3], 8)} {
		if !strings.Contains(ours, v) {
			t.Errorf("our side saw %q, lacking %s", ours, v)
		}
	}
}

// checkExchange checks a rc_pingpong exchange: each side printed the
// other's address exactly as the other advertised it.
func checkExchange(t *testing.T, r *caseResult) {
	t.Helper()
	checkAddrs(t, r, "::ffff:10.77.0.2", "::ffff:10.77.0.1")
}

// checkAddrs checks that each side of a rc_pingpong exchange printed the
// other's address as the other advertised it, r.VM's side having GID
// vmGID and r.Host's hostGID.
func checkAddrs(t *testing.T, r *caseResult, vmGID, hostGID string) {
	t.Helper()
	vmAs := addrLines(r.VM, func(string) bool { return true })
	ourAs := addrLines(r.Host, func(string) bool { return true })
	var vmLocal, vmRemote, ourLocal, ourRemote *seenAddr
	for i := range vmAs {
		if vmAs[i].which == "local" {
			vmLocal = &vmAs[i]
		} else {
			vmRemote = &vmAs[i]
		}
	}
	for i := range ourAs {
		if ourAs[i].which == "local" {
			ourLocal = &ourAs[i]
		} else {
			ourRemote = &ourAs[i]
		}
	}
	if vmLocal == nil || vmRemote == nil || ourLocal == nil || ourRemote == nil {
		t.Fatalf("missing address lines: VM %+v, ours %+v", vmAs, ourAs)
	}
	if ourLocal.qpn != vmRemote.qpn || ourLocal.psn != vmRemote.psn || vmRemote.gid != hostGID {
		t.Errorf("VM saw our address as %+v, we sent %+v", *vmRemote, *ourLocal)
	}
	if vmLocal.qpn != ourRemote.qpn || vmLocal.psn != ourRemote.psn || ourRemote.gid != vmGID {
		t.Errorf("we saw the VM's address as %+v, it sent %+v", *ourRemote, *vmLocal)
	}
}

// exchangeCases check the TCP exchanges alone against rdma-core's
// ibv_rc_pingpong and perftest, both roles each (no RoCE traffic from us:
// the advertised QPs do not exist).
func exchangeCases() []vmCase {
	return []vmCase{{
		name: "xchg-vm-server",
		vm:   "timeout 10 ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -p 18515 -n 5; echo rc_pingpong rc=$?; exit 0",
		host: selfCmd("-x -a $RXEVM_HOST_IP -g 0 -q 0x33 -w 30s -p 18515 $RXEVM_VM_IP"),
		check: func(t *testing.T, r *caseResult) {
			if r.HostRC != 0 {
				t.Errorf("our client exited %d", r.HostRC)
			}
			checkExchange(t, r)
		},
	}, {
		name: "xchg-vm-client",
		vm:   retryClient("timeout 6 ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -p 18516 -n 5 $RXEVM_PEER", 100) + "; exit 0",
		host: selfCmd("-x -a $RXEVM_HOST_IP -g 0 -q 0x44 -p 18516"),
		check: func(t *testing.T, r *caseResult) {
			if r.HostRC != 0 {
				t.Errorf("our server exited %d", r.HostRC)
			}
			checkExchange(t, r)
		},
	}, {
		name: "xchg-perftest-write-bw",
		vm: `ib_write_bw -V
timeout 30 ib_write_bw -d $RXEVM_DEV -x $RXEVM_GID_IDX -p 18517 -s 65536 -n 5000 > /tmp/pt.out 2>&1
rc=$?
cat /tmp/pt.out
exit $rc`,
		host:  fmt.Sprintf("%s=$RXEVM_VM_IP:18517 %q", perftestChildEnv, os.Args[0]),
		check: checkPerftestServer,
	}, {
		name: "xchg-perftest-read-bw",
		vm: `timeout 30 ib_read_bw -d $RXEVM_DEV -x $RXEVM_GID_IDX -p 18519 -s 65536 -n 5000 > /tmp/pr.out 2>&1
rc=$?
cat /tmp/pr.out
exit $rc`,
		host:  fmt.Sprintf("%s=$RXEVM_VM_IP:18519 %q", perftestChildEnv, os.Args[0]),
		check: checkPerftestServer,
	}, {
		// ib_write_bw as client against our perftest server role: the
		// VM must print our key as the remote address. It then writes
		// into a QP that does not exist, gets no ACK and (retry_cnt 7
		// is infinite in rxe) never fails; timeout ends it.
		name: "xchg-perftest-write-bw-client",
		vm:   retryClient("timeout 8 ib_write_bw -d $RXEVM_DEV -x $RXEVM_GID_IDX -p 18518 -n 5 $RXEVM_PEER", 50) + "; exit 0",
		host: fmt.Sprintf("%s=18518 %q", perftestServerChildEnv, os.Args[0]),
		check: func(t *testing.T, r *caseResult) {
			if !strings.Contains(r.Host, "PERFTEST-SERVER-OK") {
				t.Error("our perftest server role did not complete")
			}
			for _, re := range []string{
				`remote address: LID 0000 QPN 0x0066 PSN 0x171717 RKey 0x00beef VAddr 0x007f0000aa0000`,
				`GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01`,
			} {
				if !regexp.MustCompile(re).MatchString(r.VM) {
					t.Errorf("ib_write_bw client output lacks %s", re)
				}
			}
			m := regexp.MustCompile(`local address: LID 0000 QPN 0x([0-9a-f]+) PSN 0x([0-9a-f]+) RKey 0x([0-9a-f]+)`).FindStringSubmatch(r.VM)
			if m == nil {
				t.Fatal("no local address line from the ib_write_bw client")
			}
			ours := regexp.MustCompile(`perftest server keys: remote .*`).FindString(r.Host)
			for _, v := range []string{"QPN 0x" + padHex(m[1], 6), "PSN 0x" + padHex(m[2], 6), "RKey 0x" + padHex(m[3], 8)} {
				if !strings.Contains(ours, v) {
					t.Errorf("our server saw %q, lacking %s", ours, v)
				}
			}
		},
	}}
}

// casesEnv names an environment variable holding a regular expression:
// when set, TestInteropRXE runs only the cases whose names match it (each
// boot still runs its cases in order; a boot left with none is skipped).
const casesEnv = "UCGO_RXE_CASES"

// shortEnv names an environment variable: set to 1, TestInteropRXE leaves
// out its long boot (ibv_rc_pingpong -n 10000, both roles).
const shortEnv = "UCGO_RXE_SHORT"

// TestInteropRXE runs every interop case against Linux soft-RoCE in the
// rxe VM in two boots (each costs 7-10 s under TCG): the main one, and
// one for the long ping-pong runs, so that a long run that hangs until
// its boot's limit costs no other case its result. The link MTU is 9000
// so that a path MTU of 4096 fits.
func TestInteropRXE(t *testing.T) {
	harness := rxeHarness(t)
	cache := rxeCache(t, harness)
	boot := vmBoot{name: "interop", timeout: 420, mtu: 9000, cases: exchangeCases()}
	peer, err := rxePeerBinary(t)
	if err != nil {
		t.Logf("rdma-core peer cases not run: %v", err)
	} else {
		boot.files = append(boot.files, peer+":/root/rxepeer")
		boot.cases = append(boot.cases, rxePeerLoopbackCase())
	}
	pp, ppLong := pingpongCases(18520)
	boot.cases = append(boot.cases, pp...)
	if peer != "" {
		// The VM powers off in the last case.
		boot.cases = append(boot.cases, oursCase(), powerOffCase())
	}
	long := vmBoot{name: "interop-long", timeout: 480, mtu: 9000, cases: ppLong}
	if os.Getenv(shortEnv) == "1" {
		t.Logf("%s=1: the long cases are not run", shortEnv)
		long.cases = nil
	}

	if re := os.Getenv(casesEnv); re != "" {
		keep := regexp.MustCompile(re)
		for _, b := range []*vmBoot{&boot, &long} {
			var cs []vmCase
			for _, c := range b.cases {
				if keep.MatchString(c.name) {
					cs = append(cs, c)
				}
			}
			t.Logf("%s=%s: %d of %d cases of boot %s", casesEnv, re, len(cs), len(b.cases), b.name)
			b.cases = cs
		}
	}
	if len(boot.cases) > 0 {
		runBoot(t, harness, cache, boot)
	}
	if len(long.cases) == 0 {
		return
	}
	// The long boot gets at most what the test's deadline (go test
	// -timeout; .ci/run gives 20 minutes) leaves, less runBoot's margin
	// over run.sh's limit and time for the checks.
	if dl, ok := t.Deadline(); ok {
		long.timeout = min(long.timeout, int(time.Until(dl).Seconds())-150)
	}
	if long.timeout < 120 {
		t.Errorf("%d s left before the test's deadline: the long cases were not run (raise go test -timeout, or set %s=1 to leave them out)", long.timeout, shortEnv)
		return
	}
	runBoot(t, harness, cache, long)
}
