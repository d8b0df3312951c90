package failover

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Mode says where an endpoint may move when a lane fails.
type Mode uint8

const (
	// Off: a lane failure fails the endpoint, as without this package.
	Off Mode = iota
	// SameTransport: to another lane of the failed lane's transport (a
	// second rail); traffic never changes transport, so with no such
	// lane left the endpoint fails.
	SameTransport
	// AnyTransport: to any lane that reaches the peer (shm to rc).
	AnyTransport
)

var modeNames = [...]string{Off: "off", SameTransport: "same", AnyTransport: "any"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", m)
}

// ErrBadMode is returned by ParseMode for a name it does not know.
var ErrBadMode = errors.New("failover: unknown mode")

// ParseMode reads a mode as UCGO_FAILOVER spells it: off, same or any.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "none", "":
		return Off, nil
	case "same":
		return SameTransport, nil
	case "any":
		return AnyTransport, nil
	}
	return Off, fmt.Errorf("%w %q (want off, same or any)", ErrBadMode, s)
}

// Policy is what an endpoint does when one of its lanes fails.
type Policy struct {
	Mode Mode
	// Attempts is how many lanes are tried, one after the other, for one
	// failure before the endpoint fails.
	Attempts int
	// Backoff is the wait before the second attempt; it doubles for each
	// further one, up to MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// FailBack moves traffic back to the preferred lane once probes find
	// it up again.
	FailBack bool
	// ProbeInterval is how often an idle lane is probed; a lane that
	// misses ProbeMisses probes in a row has failed, so a black-holed
	// lane is found within ProbeInterval*(ProbeMisses+1).
	ProbeInterval time.Duration
	ProbeMisses   int
	// UpProbes is how many answered probes in a row bring a probing lane
	// back up.
	UpProbes int
}

// DefaultPolicy fails over to any transport, three attempts from 1 ms
// backoff, fails back, and finds a black hole within a second (probes
// every 200 ms, four misses).
func DefaultPolicy() Policy {
	return Policy{
		Mode:          AnyTransport,
		Attempts:      3,
		Backoff:       time.Millisecond,
		MaxBackoff:    100 * time.Millisecond,
		FailBack:      true,
		ProbeInterval: 200 * time.Millisecond,
		ProbeMisses:   4,
		UpProbes:      3,
	}
}

// ErrBadPolicy wraps what Validate finds wrong.
var ErrBadPolicy = errors.New("failover: invalid policy")

// Validate checks the policy's numbers.
func (p Policy) Validate() error {
	switch {
	case p.Mode > AnyTransport:
		return fmt.Errorf("%w: mode %d", ErrBadPolicy, p.Mode)
	case p.Mode == Off:
		return nil
	case p.Attempts < 1:
		return fmt.Errorf("%w: %d attempts, want at least 1", ErrBadPolicy, p.Attempts)
	case p.Backoff < 0 || p.MaxBackoff < p.Backoff:
		return fmt.Errorf("%w: backoff %v up to %v", ErrBadPolicy, p.Backoff, p.MaxBackoff)
	case p.ProbeInterval <= 0 || p.ProbeMisses < 1 || p.UpProbes < 1:
		return fmt.Errorf("%w: probes every %v, %d misses, %d to come up", ErrBadPolicy, p.ProbeInterval, p.ProbeMisses, p.UpProbes)
	}
	return nil
}

// Delay is the wait before attempt n (0 is the first, which does not
// wait).
func (p Policy) Delay(n int) time.Duration {
	if n <= 0 || p.Backoff <= 0 {
		return 0
	}
	d := p.Backoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}

// DetectBound is the longest a black-holed lane stays up under the
// policy's probes.
func (p Policy) DetectBound() time.Duration {
	return p.ProbeInterval * time.Duration(p.ProbeMisses+1)
}

// ShouldFailOver says whether a lane that failed with err may be replaced
// by another lane to the same peer. Only faults that name a part of the
// path (a NIC, a link, a route, a lost or reset connection) fail over; a
// dead peer process, a closed or canceled endpoint, a call that was wrong
// and a status that names no part never do. A dead peer anywhere in err's
// chain decides (an operation flushed because its connection found the
// peer process gone is a dead peer, not a lost path).
func (p Policy) ShouldFailOver(err error) bool {
	var st uct.Status
	if p.Mode == Off || !errors.As(err, &st) || errors.Is(err, uct.ErrPeerFailed) {
		return false
	}
	switch st {
	case uct.ErrLocalNICFailed, uct.ErrLocalNICReinit, uct.ErrRemoteNICFailed, uct.ErrRemoteNICReinit,
		uct.ErrRouteLost, uct.ErrUnreachable, uct.ErrEndpointTimeout, uct.ErrTimedOut,
		uct.ErrConnectionReset, uct.ErrFlushed, uct.ErrRNRRetryExceeded, uct.ErrDataCorrupt:
		return true
	}
	return false
}

// Lane describes one lane of an endpoint, for Select and the event.
type Lane struct {
	Index     int    // the lane's index in its endpoint
	Transport string // "shm", "rc"
	Device    string // the local device (rc: the netdev)
	Health    State
}

func (l Lane) String() string {
	if l.Device == "" {
		return fmt.Sprintf("lane %d (%s)", l.Index, l.Transport)
	}
	return fmt.Sprintf("lane %d (%s on %s)", l.Index, l.Transport, l.Device)
}

// Select picks the lane to move to when lanes[failed] fails: the first
// lane in preference order (the order of lanes) that is up, other than
// the failed one, and allowed by the mode; if none is up, the first that
// is suspect (it missed a probe but still carries traffic, which a
// loaded host's late answers also cause), since moving there keeps the
// endpoint while failing it would end it. ok is false when there is
// none.
func (p Policy) Select(lanes []Lane, failed int) (idx int, ok bool) {
	if p.Mode == Off || failed < 0 || failed >= len(lanes) {
		return -1, false
	}
	from := lanes[failed]
	for _, want := range [...]State{Up, Suspect} {
		for i, l := range lanes {
			if i == failed || l.Health != want {
				continue
			}
			if p.Mode == SameTransport && l.Transport != from.Transport {
				continue
			}
			return i, true
		}
	}
	return -1, false
}
