package failover

import (
	"fmt"
	"time"
)

// State is a lane's health.
type State uint8

const (
	// Up: the lane carries traffic.
	Up State = iota
	// Suspect: a probe went unanswered; the lane still carries traffic.
	Suspect
	// Failed: the lane carries nothing; its work has moved or failed.
	Failed
	// Probing: the lane is being tried again (its link came back, or its
	// backoff ended); it carries only probes until enough are answered.
	Probing
)

var stateNames = [...]string{Up: "up", Suspect: "suspect", Failed: "failed", Probing: "probing"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Carries says whether a lane in this state may carry traffic.
func (s State) Carries() bool { return s == Up || s == Suspect }

// Transition is one change of a lane's health; From == To means nothing
// changed.
type Transition struct {
	From, To State
	At       time.Time
	Cause    error // what made the lane fail (Failed only)
}

// Changed says whether the state moved.
func (t Transition) Changed() bool { return t.From != t.To }

// Health is the state machine of one lane:
//
//	up --miss--> suspect --ProbeMisses misses--> failed
//	up, suspect, probing --fault--> failed
//	suspect --heard--> up
//	failed --probe--> probing --UpProbes answers--> up
//	probing --miss--> failed
//
// Traffic or a probe answer heard on a failed lane is a straggler from
// before the failure and changes nothing.
type Health struct {
	state  State
	since  time.Time
	cause  error
	misses int // probes missed in a row (up, suspect)
	ups    int // probes answered in a row (probing)
	misLim int
	upLim  int
}

// NewHealth starts a lane up at now, judged by the policy's probe counts.
func NewHealth(p Policy, now time.Time) *Health {
	return &Health{state: Up, since: now, misLim: max(1, p.ProbeMisses), upLim: max(1, p.UpProbes)}
}

// State is the lane's health now.
func (h *Health) State() State { return h.state }

// Since is when the lane entered its state.
func (h *Health) Since() time.Time { return h.since }

// Cause is the error that failed the lane (nil unless failed or probing).
func (h *Health) Cause() error { return h.cause }

func (h *Health) move(to State, now time.Time, cause error) Transition {
	t := Transition{From: h.state, To: to, At: now, Cause: cause}
	if to != h.state {
		h.state, h.since = to, now
	}
	if to == Failed {
		h.cause = cause
	}
	if to == Up {
		h.cause = nil
	}
	h.misses, h.ups = 0, 0
	return t
}

// Fault records a hard error of the lane (retries exceeded, link down, a
// flushed queue): it fails at once.
func (h *Health) Fault(err error, now time.Time) Transition {
	if h.state == Failed {
		return Transition{From: Failed, To: Failed, At: now, Cause: h.cause}
	}
	return h.move(Failed, now, err)
}

// Missed records a probe that went unanswered.
func (h *Health) Missed(now time.Time, cause error) Transition {
	switch h.state {
	case Up, Suspect:
		n := h.misses + 1
		if n >= h.misLim {
			return h.move(Failed, now, cause)
		}
		t := h.move(Suspect, now, nil)
		h.misses = n
		return t
	case Probing:
		return h.move(Failed, now, cause)
	}
	return Transition{From: h.state, To: h.state, At: now}
}

// Heard records traffic or a probe answer on the lane.
func (h *Health) Heard(now time.Time) Transition {
	switch h.state {
	case Up:
		h.misses = 0
	case Suspect:
		return h.move(Up, now, nil)
	case Probing:
		n := h.ups + 1
		if n >= h.upLim {
			return h.move(Up, now, nil)
		}
		h.ups = n
	}
	return Transition{From: h.state, To: h.state, At: now}
}

// Probe starts probing a failed lane.
func (h *Health) Probe(now time.Time) Transition {
	if h.state != Failed {
		return Transition{From: h.state, To: h.state, At: now}
	}
	cause := h.cause
	t := h.move(Probing, now, nil)
	h.cause = cause
	return t
}
