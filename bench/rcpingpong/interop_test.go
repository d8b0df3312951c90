package main

import (
	"bytes"
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

// runVM boots the VM once: vmScript runs inside it (shipped as a file),
// hostCmd in the host netns. It returns the whole console output.
func runVM(t *testing.T, harness, cache string, timeout int, vmScript, hostCmd string, extra ...string) (string, error) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "case.sh")
	if err := os.WriteFile(script, []byte(vmScript), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-t", fmt.Sprint(timeout), "-f", script + ":/root/case.sh", "-H", hostCmd}, extra...)
	args = append(args, "sh /root/case.sh")
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeout+60)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(harness, "run.sh"), args...)
	// A netns and tap of our own, so that a run of the harness by someone
	// else on this machine does not hold our lock.
	id := os.Getpid() % 100000
	cmd.Env = append(os.Environ(), "RXEVM_CACHE="+cache,
		fmt.Sprintf("RXEVM_NETNS=ucgorxe%d", id), fmt.Sprintf("RXEVM_TAP=ucgotap%d", id))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
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

// vmSection returns the VM's own lines between its CASE-BEGIN/END markers.
func vmSection(out, name string) string {
	i := strings.Index(out, "CASE-BEGIN "+name)
	j := strings.Index(out, "CASE-END "+name)
	if i < 0 || j < i {
		return ""
	}
	return out[i:j]
}

// TestInteropExchangeRXE checks the TCP exchange against rdma-core's
// ibv_rc_pingpong in the soft-RoCE VM, both ways, in one boot: each side
// must print the other's address exactly as the other advertised it.
func TestInteropExchangeRXE(t *testing.T) {
	harness := rxeHarness(t)
	cache := rxeCache(t, harness)
	vm := `
echo "CASE-BEGIN vm-server"
timeout 10 ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -n 5
echo "CASE-END vm-server rc=$?"
echo "CASE-BEGIN vm-client"
n=0
while :; do
  timeout 6 ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -p 18516 -n 5 $RXEVM_PEER
  rc=$?
  [ $rc = 1 ] || break
  n=$((n+1)); [ $n -ge 100 ] && break
  sleep 0.2
done
echo "CASE-END vm-client rc=$rc"
echo "CASE-BEGIN perftest-write-bw"
ib_write_bw -V
timeout 30 ib_write_bw -d $RXEVM_DEV -x $RXEVM_GID_IDX -p 18517 -s 65536 -n 5000 > /tmp/pt.out 2>&1
rc=$?
sleep 1
cat /tmp/pt.out
echo "CASE-END perftest-write-bw rc=$rc"
echo "CASE-BEGIN perftest-read-bw"
timeout 30 ib_read_bw -d $RXEVM_DEV -x $RXEVM_GID_IDX -p 18519 -s 65536 -n 5000 > /tmp/pr.out 2>&1
rc=$?
sleep 1
cat /tmp/pr.out
echo "CASE-END perftest-read-bw rc=$rc"
echo "CASE-BEGIN perftest-write-bw-client"
n=0
while :; do
  timeout 8 ib_write_bw -d $RXEVM_DEV -x $RXEVM_GID_IDX -p 18518 -n 5 $RXEVM_PEER
  rc=$?
  [ $rc = 1 ] || break
  n=$((n+1)); [ $n -ge 50 ] && break
  sleep 0.3
done
echo "CASE-END perftest-write-bw-client rc=$rc"
`
	host := "set -o pipefail; " +
		selfCmd("-x -a $RXEVM_HOST_IP -g 0 -q 0x33 -w 30s $RXEVM_VM_IP") + " | sed 's/^/vm-server-peer /' && echo HOST-CLIENT-OK; " +
		selfCmd("-x -a $RXEVM_HOST_IP -g 0 -q 0x44 -p 18516") + " | sed 's/^/vm-client-peer /' && echo HOST-SERVER-OK; " +
		fmt.Sprintf("%s=$RXEVM_VM_IP:18517 %q; ", perftestChildEnv, os.Args[0]) +
		fmt.Sprintf("%s=$RXEVM_VM_IP:18519 %q | sed 's/^/read-bw /'; ", perftestChildEnv, os.Args[0]) +
		fmt.Sprintf("%s=18518 %q", perftestServerChildEnv, os.Args[0])
	out, err := runVM(t, harness, cache, 120, vm, host)
	t.Logf("run.sh: %v\n%s", err, out)
	if err != nil {
		t.Errorf("run.sh failed (126: a host-side command failed): %v", err)
	}

	for _, name := range []string{"perftest-write-bw", "perftest-read-bw"} {
		t.Run(name, func(t *testing.T) { checkPerftestServer(t, out, name) })
	}

	// ib_write_bw as client against our perftest server role: the VM must
	// print our key as the remote address. It then writes into a QP that
	// does not exist, gets no ACK and (retry_cnt 7 is infinite in rxe)
	// never fails; timeout ends it.
	t.Run("perftest-write-bw-client", func(t *testing.T) {
		sec := vmSection(out, "perftest-write-bw-client")
		if !strings.Contains(out, "PERFTEST-SERVER-OK") {
			t.Error("our perftest server role did not complete")
		}
		for _, re := range []string{
			`remote address: LID 0000 QPN 0x0066 PSN 0x171717 RKey 0x00beef VAddr 0x007f0000aa0000`,
			`GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01`,
		} {
			if !regexp.MustCompile(re).MatchString(sec) {
				t.Errorf("ib_write_bw client output lacks %s", re)
			}
		}
		m := regexp.MustCompile(`local address: LID 0000 QPN 0x([0-9a-f]+) PSN 0x([0-9a-f]+) RKey 0x([0-9a-f]+)`).FindStringSubmatch(sec)
		if m == nil {
			t.Fatal("no local address line from the ib_write_bw client")
		}
		ours := regexp.MustCompile(`\[host\] perftest server keys: remote .*`).FindString(out)
		for _, v := range []string{"QPN 0x" + padHex(m[1], 6), "PSN 0x" + padHex(m[2], 6), "RKey 0x" + padHex(m[3], 8)} {
			if !strings.Contains(ours, v) {
				t.Errorf("our server saw %q, lacking %s", ours, v)
			}
		}
	})

	for _, c := range []struct{ name, ok string }{{"vm-server", "HOST-CLIENT-OK"}, {"vm-client", "HOST-SERVER-OK"}} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(out, c.ok) {
				t.Fatalf("our side did not complete the exchange (%s missing)", c.ok)
			}
			vmAs := addrLines(vmSection(out, c.name), func(l string) bool { return !strings.HasPrefix(l, "[host]") })
			ourAs := addrLines(out, func(l string) bool { return strings.HasPrefix(l, "[host] "+c.name+"-peer ") })
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
			if ourLocal.qpn != vmRemote.qpn || ourLocal.psn != vmRemote.psn || vmRemote.gid != "::ffff:10.77.0.1" {
				t.Errorf("VM saw our address as %+v, we sent %+v", *vmRemote, *ourLocal)
			}
			if vmLocal.qpn != ourRemote.qpn || vmLocal.psn != ourRemote.psn || ourRemote.gid != "::ffff:10.77.0.2" {
				t.Errorf("we saw the VM's address as %+v, it sent %+v", *ourRemote, *vmLocal)
			}
		})
	}
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
func checkPerftestServer(t *testing.T, out, name string) {
	sec := vmSection(out, name)
	prefix := "[host] " // the write_bw client role's lines are not tagged
	if name != "perftest-write-bw" {
		prefix += strings.TrimPrefix(name, "perftest-") + " "
	}
	for _, want := range []string{
		prefix + "PERFTEST-CLIENT-OK", // our side went through every step
		"CASE-END " + name + " rc=0",  // the server exited 0
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	// The VM printed our key and GID, and our bandwidth report.
	for _, re := range []string{
		`remote address: LID 0000 QPN 0x0055 PSN 0x424242( OUT 0x01)? RKey 0x00abcd VAddr 0x007f1234560000`,
		`GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01`,
		`\b65536\s+5000\s+1234\.50\s+1234\.50\s+0\.019753`,
	} {
		if !regexp.MustCompile(re).MatchString(sec) {
			t.Errorf("%s output lacks %s", name, re)
		}
	}
	// We parsed the VM's key: its QPN and rkey as the VM printed them.
	m := regexp.MustCompile(`local addres.*?QPN 0x([0-9a-f]+) PSN 0x([0-9a-f]+)(?: OUT 0x[0-9a-f]+)? RKey 0x([0-9a-f]+)`).FindStringSubmatch(strings.ReplaceAll(sec, "\n", " "))
	if m == nil {
		t.Fatalf("no local address line from %s", name)
	}
	ours := regexp.MustCompile(regexp.QuoteMeta(prefix+"perftest keys: remote ") + `.*`).FindString(out)
	for _, v := range []string{"QPN 0x" + padHex(m[1], 6), "PSN 0x" + padHex(m[2], 6), "RKey 0x" + padHex(m[3], 8)} {
		if !strings.Contains(ours, v) {
			t.Errorf("our side saw %q, lacking %s", ours, v)
		}
	}
}
