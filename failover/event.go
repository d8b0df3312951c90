package failover

import (
	"fmt"
	"time"
)

// Kind is what an Event reports.
type Kind uint8

const (
	// FailedOver: traffic moved from a failed lane to another.
	FailedOver Kind = iota
	// FailedBack: traffic moved back to the preferred lane, up again.
	FailedBack
	// Exhausted: a lane failed and no lane was left to move to; the
	// endpoint fails with Cause.
	Exhausted
	// Restored: a failed lane is up again (rebuilt after its link came
	// back); Cause says which side's device came back
	// (uct.ErrLocalNICReinit, uct.ErrRemoteNICReinit).
	Restored
)

var kindNames = [...]string{FailedOver: "failed over", FailedBack: "failed back", Exhausted: "no lane left", Restored: "lane restored"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Event is what the user hears of a failover.
type Event struct {
	Kind     Kind
	Endpoint string // the endpoint, as ucp names it
	From, To Lane   // To is zero for Exhausted
	// Cause is the status that failed From (nil for FailedBack).
	Cause error
	// Detect is the time from the lane's last sign of life to the
	// failure being seen; Switch from the failure being seen to the
	// first message sent on To.
	Detect, Switch time.Duration
	// Replayed is how many messages were sent again on To.
	Replayed int
	At       time.Time
}

func (e Event) String() string {
	switch e.Kind {
	case Exhausted:
		return fmt.Sprintf("%s: %s failed (%v) after %v; no lane left", e.Endpoint, e.From, e.Cause, e.Detect)
	case Restored:
		return fmt.Sprintf("%s: %s restored (%v)", e.Endpoint, e.From, e.Cause)
	case FailedBack:
		return fmt.Sprintf("%s: failed back from %s to %s in %v, %d replayed", e.Endpoint, e.From, e.To, e.Switch, e.Replayed)
	}
	return fmt.Sprintf("%s: %s failed (%v), seen after %v; moved to %s in %v, %d replayed",
		e.Endpoint, e.From, e.Cause, e.Detect, e.To, e.Switch, e.Replayed)
}
