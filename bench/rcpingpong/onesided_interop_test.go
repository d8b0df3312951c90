package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// Ports of the rxepeer processes the cases against our verbs use.
const (
	portOneSided   = 18702 // one-sided suite, both ways
	portBadKeyOurs = 18703 // we issue a WRITE with a bad rkey
	portBadKeyRxe  = 18704 // rxe issues a WRITE with a bad rkey
	portRNROurs    = 18705 // we SEND, rxe has no receive posted
	portRNRRxe     = 18706 // rxe SENDs, we have no receive posted
	portPowerOff   = 18707 // the VM powers off under our WRITEs
)

// oursConn are the attributes of the cases between our QPs and rxe's: as
// defaultConn, but with a local ACK timeout of 1.07 s (a VM under TCG on
// a loaded machine can take longer than 67 ms to answer).
var oursConn = connParams{MTU: 1024, Timeout: 18, Retry: 3, RNRRetry: 7, MinRNR: 12, RdAtomic: 4}

// rnrConn are the attributes of the RNR cases: a finite rnr_retry and
// the shortest RNR timer (10 µs).
var rnrConn = connParams{MTU: 1024, Timeout: 18, Retry: 3, RNRRetry: 2, MinRNR: 1, RdAtomic: 4}

const qpsErr = 6 // ibv_qp_state IBV_QPS_ERR

// runOursRole runs the cases with one of our QPs against rxepeer QPs in
// the VM (role "ours": one-sided suite, bad rkeys, RNR; role "poweroff":
// retry exceeded when the VM powers off mid-transfer).
func runOursRole(ctx context.Context, s *suite, role, vm string) {
	host, err := netip.ParseAddr(os.Getenv("RXEVM_HOST_IP"))
	if !s.check("host-addr", err) {
		return
	}
	dev, err := verbs.Open(verbs.Config{Addr: host})
	if !s.check("open", err) {
		return
	}
	defer dev.Close()
	if p := dev.LocalAddr().Port(); p != 4791 {
		s.check("port", fmt.Errorf("device on port %d, not 4791", p))
		return
	}
	// pair connects a new ours to the rxepeer on port and returns both.
	pair := func(tag string, port, size int, po, pv connParams) (*ourPeer, *rxePeerCtl, bool) {
		v, err := dialRxePeer(ctx, "rxe", net.JoinHostPort(vm, strconv.Itoa(port)))
		if !s.check(tag+"/dial", err) {
			return nil, nil, false
		}
		o, err := newOurPeer("ours", dev, size)
		if !s.check(tag+"/setup", err) {
			v.Close()
			return nil, nil, false
		}
		if _, _, err := connectPair(o, v, po, pv); !s.check(tag+"/connect", err) {
			o.Close()
			v.Close()
			return nil, nil, false
		}
		return o, v, true
	}
	switch role {
	case "ours":
		if o, v, ok := pair("connect", portOneSided, 65536, oursConn, oursConn); ok {
			oneSided(s, "ours-to-rxe", o, v)
			oneSided(s, "rxe-to-ours", v, o)
			o.Close()
			v.Close()
		}
		badKey(s, "ours-bad-rkey", pair, portBadKeyOurs, true)
		badKey(s, "rxe-bad-rkey", pair, portBadKeyRxe, false)
		rnr(s, "ours-to-rxe-rnr", dev, pair, portRNROurs, true)
		rnr(s, "rxe-to-ours-rnr", dev, pair, portRNRRxe, false)
	case "poweroff":
		powerOff(s, dev, pair)
	}
}

type pairFunc func(tag string, port, size int, po, pv connParams) (*ourPeer, *rxePeerCtl, bool)

// badKey: a WRITE with a wrong rkey must complete with remote access
// error on the side that issued it; the responder's QP goes to ERR.
func badKey(s *suite, tag string, pair pairFunc, port int, oursIssue bool) {
	o, v, ok := pair(tag, port, 65536, oursConn, oursConn)
	if !ok {
		return
	}
	defer o.Close()
	defer v.Close()
	var issuer rcPeer = v
	if oursIssue {
		issuer = o
	}
	w, err := issuer.Op("write", 0, 128, 256, 0x5a00, 0, 0)
	s.check(tag+"/wc", wantWC(w, err, wcRemAccessErr))
	if oursIssue {
		st, err := v.State()
		if err == nil && st != qpsErr {
			err = fmt.Errorf("rxe's QP in state %d, want ERR (%d)", st, qpsErr)
		}
		s.check(tag+"/rxe-qp-err", err)
		ev, err := v.Async()
		fmt.Fprintf(s.w, "INFO %s: rxe async events: %s (%v)\n", tag, ev, err)
	} else {
		var err error
		if st := o.qp.State(); st != verbs.QPSErr {
			err = fmt.Errorf("our QP in state %v, want ERR", st)
		}
		s.check(tag+"/ours-qp-err", err)
		fmt.Fprintf(s.w, "INFO %s: our async events: %s\n", tag, drainEvents(o.dev))
	}
}

// rnr: a SEND to a QP with no receive posted draws RNR NAKs and, with
// rnr_retry 2, completes with RNR retry exceeded on the sender.
func rnr(s *suite, tag string, dev *verbs.Device, pair pairFunc, port int, oursSend bool) {
	o, v, ok := pair(tag, port, 65536, rnrConn, rnrConn)
	if !ok {
		return
	}
	defer o.Close()
	defer v.Close()
	before := dev.Counters()
	var sender rcPeer = v
	if oursSend {
		sender = o
	}
	w, err := sender.Op("send", 0, 0, 100, 0, ^uint64(0), 0)
	s.check(tag+"/wc", wantWC(w, err, wcRNRRetryExcErr))
	after := dev.Counters()
	naks := after.RNRNAKsRcvd - before.RNRNAKsRcvd
	what := "received"
	if !oursSend {
		naks, what = after.RNRNAKsSent-before.RNRNAKsSent, "sent"
	}
	fmt.Fprintf(s.w, "INFO %s: %d RNR NAKs %s by us (rnr_retry %d)\n", tag, naks, what, rnrConn.RNRRetry)
	var cerr error
	if naks < uint64(rnrConn.RNRRetry)+1 {
		cerr = fmt.Errorf("%d RNR NAKs %s, want at least rnr_retry+1 = %d", naks, what, rnrConn.RNRRetry+1)
	}
	s.check(tag+"/naks", cerr)
}

// powerOff: we post 1 MiB WRITEs to rxe, the VM powers off; one of them
// must complete with retry exceeded (the rest flushed). The time from the
// power-off command's answer to that completion is reported beside the
// bound timeout × (retry_cnt+1).
func powerOff(s *suite, dev *verbs.Device, pair pairFunc) {
	const size, chunk = 4 << 20, 1 << 20
	o, v, ok := pair("poweroff", portPowerOff, size, defaultConn, defaultConn)
	if !ok {
		return
	}
	defer o.Close()
	for i := 0; i < size/chunk; i++ {
		if !s.check(fmt.Sprintf("poweroff/post-%d", i), o.post("write", i*chunk, i*chunk, chunk, 0, 0, 0)) {
			return
		}
	}
	if !s.check("poweroff/command", v.ok("poweroff")) {
		return
	}
	t0 := time.Now()
	v.c.Close()
	var got []string
	var failed *wcResult
	for i := 0; i < size/chunk; i++ {
		w, err := o.waitWC(o.scq)
		if !s.check(fmt.Sprintf("poweroff/wc-%d", i), err) {
			return
		}
		got = append(got, w.Name)
		if w.Status != wcSuccess && failed == nil {
			failed = &w
			el := time.Since(t0)
			bound := time.Duration(4096<<defaultConn.Timeout) * time.Nanosecond * time.Duration(defaultConn.Retry+1)
			fmt.Fprintf(s.w, "INFO poweroff: %s %v after the power-off answer (timeout %d, retry_cnt %d: bound %v)\n",
				w.Name, el.Round(time.Millisecond), defaultConn.Timeout, defaultConn.Retry, bound.Round(time.Millisecond))
		}
	}
	fmt.Fprintf(s.w, "INFO poweroff: completions %s; timeouts %d\n", strings.Join(got, ", "), dev.Counters().Timeouts)
	var err error
	if failed == nil {
		err = fmt.Errorf("every WRITE succeeded: %v", got)
	} else if failed.Status != wcRetryExcErr {
		err = fmt.Errorf("first failed WRITE: %v, want retry exceeded", *failed)
	}
	s.check("poweroff/retry-exceeded", err)
}

// drainEvents returns the pending async events of dev, acked.
func drainEvents(dev *verbs.Device) string {
	var out []string
	for {
		ev, ok := dev.Events().TryGet()
		if !ok {
			break
		}
		out = append(out, ev.String())
		ev.Ack()
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// oursCase runs the one-sided suite between our verbs and rxepeer in
// both directions, then the bad-rkey and RNR cases, each against an
// rxepeer process of its own (a failed QP is in ERR).
func oursCase() vmCase {
	var vm strings.Builder
	ports := []int{portOneSided, portBadKeyOurs, portBadKeyRxe, portRNROurs, portRNRRxe}
	for i, p := range ports {
		fmt.Fprintf(&vm, "timeout 150 /root/rxepeer -g $RXEVM_GID_IDX -p %d > /tmp/rxepeer%d.log 2>&1 & p%d=$!\n", p, p, i)
	}
	vm.WriteString("rc=0\n")
	for i, p := range ports {
		fmt.Fprintf(&vm, "wait $p%d || { echo rxepeer %d rc=$?; rc=1; }\ncat /tmp/rxepeer%d.log\n", i, p, p)
	}
	vm.WriteString("exit $rc")
	return vmCase{
		name:      "ours-rxepeer",
		vm:        vm.String(),
		host:      fmt.Sprintf("%s=ours %q", rxePeerRoleEnv, os.Args[0]),
		hostLimit: 180 * time.Second,
		check: func(t *testing.T, r *caseResult) {
			wantExit(t, r, true)
			checkChecks(t, r.Host, 60)
		},
	}
}

// powerOffCase must be the last case of its boot: the VM powers off.
func powerOffCase() vmCase {
	return vmCase{
		name: "ours-poweroff",
		vm:   fmt.Sprintf("timeout 60 /root/rxepeer -g $RXEVM_GID_IDX -p %d -s %d", portPowerOff, 4<<20),
		host: fmt.Sprintf("%s=poweroff %q", rxePeerRoleEnv, os.Args[0]),
		check: func(t *testing.T, r *caseResult) {
			if r.HostRC != 0 {
				t.Errorf("host side exited %d", r.HostRC)
			}
			checkChecks(t, r.Host, 8)
		},
	}
}
