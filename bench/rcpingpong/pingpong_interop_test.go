package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// pingpongCases run the tool against rdma-core's ibv_rc_pingpong on rxe,
// both roles: the VM as server with ours as client, and the reverse; with
// rc_pingpong's defaults (4096 bytes, MTU 1024, 1000 iterations) and with
// -s 1, -s 65536 (100 iterations; the VM as client only with
// UCGO_RXE_LONG=1), -m 4096 (the boot's link MTU must allow it) and -e on
// our side; with UCGO_RXE_LONG=1 also -n 10000 (a minute or more under
// TCG on a loaded machine: too long for CI). Both sides must print their
// summary and exit 0.
func pingpongCases(port int) []vmCase {
	const longEnv = "UCGO_RXE_LONG"
	var cs []vmCase
	for _, p := range []struct {
		tag, args    string
		size, iter   int
		ourArgs      string // extra flags on our side only
		vmServerOnly bool
		long         bool // only with UCGO_RXE_LONG=1
	}{
		{"", "", 4096, 1000, "", false, false},
		{"-s1", "-s 1", 1, 1000, "", false, false},
		{"-s65536", "-s 65536 -n 100", 65536, 100, "", false, false},
		{"-m4096", "-m 4096", 4096, 1000, "", false, false},
		{"-e", "", 4096, 1000, "-e", false, false},
		{"-n10000", "-n 10000", 4096, 10000, "", false, true},
	} {
		if p.long && os.Getenv(longEnv) != "1" {
			continue
		}
		for _, vmServer := range []bool{true, false} {
			port++
			if p.vmServerOnly && !vmServer {
				continue
			}
			if p.tag == "-s65536" && !vmServer && os.Getenv(longEnv) != "1" {
				// rxe sending 64-packet SENDs to us sometimes stalls
				// on a loaded machine (see doc.go's rxe quirks).
				continue
			}
			pp := fmt.Sprintf("ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -p %d %s", port, p.args)
			ours := fmt.Sprintf("-a $RXEVM_HOST_IP -g 0 -T 18 -p %d %s %s", port, p.args, p.ourArgs)
			c := vmCase{check: checkPingpong(p.size, p.iter), hostLimit: 150 * time.Second}
			if vmServer {
				c.name = "pp-vm-server" + p.tag
				c.vm = "timeout 120 " + pp
				c.host = selfCmd(ours + " -w 120s $RXEVM_VM_IP")
			} else {
				c.name = "pp-vm-client" + p.tag
				c.vm = retryClient("timeout 120 "+pp+" $RXEVM_PEER", 100) + "\n[ $rc = 0 ]"
				c.host = selfCmd(ours)
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// checkPingpong checks a rc_pingpong run against ours: both exited 0, both
// printed the summary for size and iters, each printed the other's
// address as advertised.
func checkPingpong(size, iters int) func(t *testing.T, r *caseResult) {
	return func(t *testing.T, r *caseResult) {
		wantExit(t, r, true)
		checkSummary(t, "VM", r.VM, size, iters)
		checkSummary(t, "ours", r.Host, size, iters)
		checkExchange(t, r)
		for _, s := range []string{r.VM, r.Host} {
			if strings.Contains(s, "Failed status") {
				t.Error("a completion failed")
			}
		}
	}
}
