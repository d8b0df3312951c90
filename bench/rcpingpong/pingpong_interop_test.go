package main

import (
	"fmt"
	"strings"
	"testing"
)

// pingpongCases run the tool against rdma-core's ibv_rc_pingpong on rxe,
// both roles: the VM as server with ours as client, and the reverse; with
// rc_pingpong's defaults (4096 bytes, MTU 1024, 1000 iterations) and with
// -s 1, -s 65536, -m 4096 (the boot's link MTU must allow it) and -e on
// our side. Both sides must print their summary and exit 0.
func pingpongCases(port int) []vmCase {
	var cs []vmCase
	for _, p := range []struct {
		tag, args  string
		size, iter int
		ourArgs    string // extra flags on our side only
	}{
		{"", "", 4096, 1000, ""},
		{"-s1", "-s 1", 1, 1000, ""},
		{"-s65536", "-s 65536", 65536, 1000, ""},
		{"-m4096", "-m 4096", 4096, 1000, ""},
		{"-e", "", 4096, 1000, "-e"},
	} {
		for _, vmServer := range []bool{true, false} {
			port++
			if p.tag == "-s65536" && !vmServer {
				continue // stalls: under investigation
			}
			pp := fmt.Sprintf("ibv_rc_pingpong -d $RXEVM_DEV -g $RXEVM_GID_IDX -p %d %s", port, p.args)
			ours := fmt.Sprintf("-a $RXEVM_HOST_IP -g 0 -p %d %s %s", port, p.args, p.ourArgs)
			c := vmCase{check: checkPingpong(p.size, p.iter)}
			if vmServer {
				c.name = "pp-vm-server" + p.tag
				c.vm = "timeout 60 " + pp
				c.host = selfCmd(ours + " -w 40s $RXEVM_VM_IP")
			} else {
				c.name = "pp-vm-client" + p.tag
				c.vm = retryClient("timeout 60 "+pp+" $RXEVM_PEER", 100) + "\n[ $rc = 0 ]"
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
