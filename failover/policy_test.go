package failover

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"off": Off, "": Off, "none": Off, "same": SameTransport, " ANY ": AnyTransport} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseMode("sometimes"); !errors.Is(err, ErrBadMode) {
		t.Errorf("ParseMode(sometimes): %v, want ErrBadMode", err)
	}
	for _, m := range []Mode{Off, SameTransport, AnyTransport} {
		if back, err := ParseMode(m.String()); err != nil || back != m {
			t.Errorf("%v does not round-trip: %v, %v", m, back, err)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatalf("default policy: %v", err)
	}
	if err := (Policy{}).Validate(); err != nil {
		t.Errorf("the zero policy is off and valid: %v", err)
	}
	bad := []func(*Policy){
		func(p *Policy) { p.Attempts = 0 },
		func(p *Policy) { p.Backoff = -1 },
		func(p *Policy) { p.MaxBackoff = p.Backoff / 2 },
		func(p *Policy) { p.ProbeInterval = 0 },
		func(p *Policy) { p.ProbeMisses = 0 },
		func(p *Policy) { p.UpProbes = 0 },
		func(p *Policy) { p.Mode = 9 },
	}
	for i, f := range bad {
		p := DefaultPolicy()
		f(&p)
		if err := p.Validate(); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("case %d: %+v: %v, want ErrBadPolicy", i, p, err)
		}
	}
}

func TestDelay(t *testing.T) {
	p := DefaultPolicy() // 1 ms doubling up to 100 ms
	want := []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}
	for n, w := range want {
		if d := p.Delay(n); d != w {
			t.Errorf("Delay(%d) = %v, want %v", n, d, w)
		}
	}
	if d := p.Delay(40); d != p.MaxBackoff {
		t.Errorf("Delay(40) = %v, want the cap %v", d, p.MaxBackoff)
	}
	if b := p.DetectBound(); b > time.Second {
		t.Errorf("the default policy finds a black hole in %v, over a second", b)
	}
}

// TestShouldFailOver: faults of a part of the path fail over; a dead
// process, a closed or canceled endpoint and a wrong call never do, nor
// does anything with failover off.
func TestShouldFailOver(t *testing.T) {
	p := DefaultPolicy()
	yes := []uct.Status{uct.ErrLocalNICFailed, uct.ErrLocalNICReinit, uct.ErrRemoteNICFailed, uct.ErrRemoteNICReinit,
		uct.ErrRouteLost, uct.ErrUnreachable, uct.ErrEndpointTimeout, uct.ErrTimedOut, uct.ErrConnectionReset,
		uct.ErrFlushed, uct.ErrRNRRetryExceeded, uct.ErrDataCorrupt}
	no := []uct.Status{uct.OK, uct.ErrInProgress, uct.ErrNoResource, uct.ErrPeerFailed, uct.ErrClosed, uct.ErrCanceled,
		uct.ErrInvalidParam, uct.ErrMessageTruncated, uct.ErrLocalProtection, uct.ErrRemoteProtection, uct.ErrUnsupported}
	for _, s := range yes {
		wrapped := uct.NewOpError("rc", "put", "ep 3", s, nil)
		if !p.ShouldFailOver(s) || !p.ShouldFailOver(fmt.Errorf("lane 0: %w", wrapped)) {
			t.Errorf("%v does not fail over", s)
		}
		if (Policy{}).ShouldFailOver(s) {
			t.Errorf("%v fails over with failover off", s)
		}
	}
	for _, s := range no {
		var err error
		if s != uct.OK {
			err = s
		}
		if p.ShouldFailOver(err) {
			t.Errorf("%v fails over", s)
		}
	}
	// an operation flushed because its connection found the peer dead
	dead := uct.NewOpError("rc", "connection", "ep 3", uct.ErrPeerFailed, errors.New("link ended without DREQ"))
	if flushed := uct.NewOpError("rc", "get_zcopy", "ep 3", uct.ErrFlushed, dead); p.ShouldFailOver(flushed) {
		t.Errorf("%v fails over", flushed)
	}
	if p.ShouldFailOver(errors.New("a bug")) {
		t.Error("an error with no status fails over")
	}
}

func TestSelect(t *testing.T) {
	lanes := []Lane{
		{Index: 0, Transport: "shm"},
		{Index: 1, Transport: "rc", Device: "eth0"},
		{Index: 2, Transport: "rc", Device: "eth1"},
	}
	any, same := DefaultPolicy(), DefaultPolicy()
	same.Mode = SameTransport
	check := func(name string, p Policy, failed, want int) {
		t.Helper()
		got, ok := p.Select(lanes, failed)
		if (want >= 0) != ok || (ok && got != want) {
			t.Errorf("%s: Select(failed %d) = %d, %v; want %d", name, failed, got, ok, want)
		}
	}
	check("any from shm", any, 0, 1)
	check("same from shm", same, 0, -1)
	check("same from rail 0", same, 1, 2)
	check("any from rail 1", any, 2, 0)
	lanes[0].Health = Failed
	check("any from rail 1, shm failed", any, 2, 1)
	lanes[1].Health = Probing
	check("same from rail 1, rail 0 probing", same, 2, -1)
	lanes[1].Health = Suspect
	check("same from rail 1, rail 0 suspect", same, 2, 1)
	lanes[0].Health = Suspect
	lanes[1].Health = Up
	check("any from rail 1, rail 0 up, shm suspect", any, 2, 1)
	lanes[1].Health = Suspect
	check("no lane up: the first suspect one", any, 2, 0)
	lanes[0].Health, lanes[1].Health = Failed, Failed
	check("none up or suspect", any, 2, -1)
	check("off", Policy{}, 2, -1)
	check("out of range", any, 7, -1)
}
