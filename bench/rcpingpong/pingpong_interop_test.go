package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// pingpongCases returns the cases that run the tool against rdma-core's
// ibv_rc_pingpong on rxe, both roles: the VM as server with ours as
// client, and the reverse; with rc_pingpong's defaults (4096 bytes, MTU
// 1024, 1000 iterations) and with -s 1, -s 65536 (100 iterations), -m 4096
// (the boot's link MTU must allow it) and -e on our side; and, in long,
// with -n 10000 (10-20 s a role under TCG on a quiet machine, minutes on
// a loaded one). Both sides must print their summary and exit 0.
func pingpongCases(port int) (cs, long []vmCase) {
	for _, p := range []struct {
		tag, args  string
		size, iter int
		ourArgs    string // extra flags on our side only
		long       bool
	}{
		{"", "", 4096, 1000, "", false},
		{"-s1", "-s 1", 1, 1000, "", false},
		{"-s65536", "-s 65536 -n 100", 65536, 100, "", false},
		{"-m4096", "-m 4096", 4096, 1000, "", false},
		{"-e", "", 4096, 1000, "-e", false},
		{"-n10000", "-n 10000", 4096, 10000, "", true},
	} {
		// The VM's timeout ends a stalled run (rxe retries forever);
		// the long cases get more, within their boot's own limit.
		vmLimit := 120
		if p.long {
			vmLimit = 300
		}
		for _, vmServer := range []bool{true, false} {
			port++
			pp := fmt.Sprintf("ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -p %d %s", port, p.args)
			ours := fmt.Sprintf("-a $RXEVM_HOST_IP -g 0 -T 18 -p %d %s %s", port, p.args, p.ourArgs)
			c := vmCase{check: checkPingpong(p.size, p.iter), hostLimit: time.Duration(vmLimit+30) * time.Second}
			if vmServer {
				c.name = "pp-vm-server" + p.tag
				c.vm = fmt.Sprintf("timeout %d %s", vmLimit, pp)
				c.host = selfCmd(fmt.Sprintf("%s -w %ds $RXEVM_VM_IP", ours, vmLimit))
			} else {
				c.name = "pp-vm-client" + p.tag
				c.vm = retryClient(fmt.Sprintf("timeout %d %s $RXEVM_PEER", vmLimit, pp), 100) + "\n[ $rc = 0 ]"
				c.host = selfCmd(ours)
			}
			if p.long {
				long = append(long, c)
			} else {
				cs = append(cs, c)
			}
		}
	}
	return cs, long
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
