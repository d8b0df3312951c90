package failover

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

func TestHealthMachine(t *testing.T) {
	p := DefaultPolicy() // 4 misses fail, 3 answers bring up
	t0 := time.Unix(1000, 0)
	h := NewHealth(p, t0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(tr Transition, from, to State) {
		t.Helper()
		if tr.From != from || tr.To != to || h.State() != to {
			t.Fatalf("transition %v -> %v (state %v), want %v -> %v", tr.From, tr.To, h.State(), from, to)
		}
	}
	step(h.Heard(at(1)), Up, Up)
	step(h.Missed(at(200), nil), Up, Suspect)
	if !h.State().Carries() {
		t.Error("a suspect lane stops carrying traffic")
	}
	step(h.Heard(at(210)), Suspect, Up) // an answer clears the suspicion
	for i := 0; i < 3; i++ {
		step(h.Missed(at(400+200*i), nil), []State{Up, Suspect, Suspect}[i], Suspect)
	}
	lost := errors.New("probe lost")
	tr := h.Missed(at(1000), lost)
	step(tr, Suspect, Failed)
	if !errors.Is(tr.Cause, lost) || !errors.Is(h.Cause(), lost) || !h.Since().Equal(at(1000)) {
		t.Errorf("failed lane: cause %v / %v, since %v", tr.Cause, h.Cause(), h.Since())
	}
	step(h.Heard(at(1001)), Failed, Failed) // a straggler
	step(h.Missed(at(1002), nil), Failed, Failed)
	step(h.Probe(at(1100)), Failed, Probing)
	if h.State().Carries() {
		t.Error("a probing lane carries traffic")
	}
	step(h.Heard(at(1110)), Probing, Probing)
	step(h.Missed(at(1120), lost), Probing, Failed) // one miss while probing fails again
	step(h.Probe(at(1200)), Failed, Probing)
	step(h.Heard(at(1210)), Probing, Probing)
	step(h.Heard(at(1220)), Probing, Probing)
	step(h.Heard(at(1230)), Probing, Up)
	if h.Cause() != nil {
		t.Errorf("an up lane keeps its cause %v", h.Cause())
	}
	tr = h.Fault(uct.ErrRouteLost, at(1300))
	step(tr, Up, Failed)
	if !errors.Is(tr.Cause, uct.ErrRouteLost) || !tr.Changed() {
		t.Errorf("fault: %+v", tr)
	}
	step(h.Fault(uct.ErrLocalNICFailed, at(1301)), Failed, Failed)
	if !errors.Is(h.Cause(), uct.ErrRouteLost) {
		t.Errorf("a second fault replaced the first cause: %v", h.Cause())
	}
	step(h.Probe(at(1400)), Failed, Probing)
	if !errors.Is(h.Cause(), uct.ErrRouteLost) {
		t.Errorf("a probing lane forgot why it failed: %v", h.Cause())
	}
	step(h.Probe(at(1401)), Probing, Probing)
}

func TestStateNames(t *testing.T) {
	for s, want := range map[State]string{Up: "up", Suspect: "suspect", Failed: "failed", Probing: "probing", 9: "state(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
}
