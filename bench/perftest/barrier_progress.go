package main

// A barrier drives its side's transport while it waits for the peer, as
// ucx_perftest's barrier calls ucp_worker_progress (uct_worker_progress
// for uct tests) while it waits. A test's last send may still sit in the
// transport until the next progress call: the rc transport rings its
// doorbell at the start of its next engine pass, so that a burst of posts
// leaves in one system call. A bandwidth test's responder ends with such a
// send (the done message the initiator's measured phase waits for) and
// goes straight into the barrier; without progress there, the message
// left only when the device's background goroutine ran, which a barrier
// spinning on the one P of a GOMAXPROCS 1 process (-c, -l) kept off the
// CPU until the runtime preempted the spin: about 20 ms added to every
// size's measured phase, most of the phase of a short bandwidth run.

// progressor is a side whose transport can make progress once.
type progressor interface{ progress() }

// Both kinds of side, and the barrier of server/client mode, take part.
var (
	_ progressor      = (*session)(nil)
	_ progressor      = (*ucpSession)(nil)
	_ barrierProgress = (*tcpOOB)(nil)
)

// barrierProgress is an oob whose barrier calls a function while it polls
// for its peer.
type barrierProgress interface{ setBarrierProgress(fn func()) }

// setBarrierProgress makes t's barrier call fn on every poll of its
// connection (nil: none).
func (t *tcpOOB) setBarrierProgress(fn func()) { t.progress = fn }

// progress runs the uct iface's progress once.
func (s *session) progress() { s.it.Progress() }

// progress runs the ucp worker's progress once.
func (s *ucpSession) progress() { s.w.Progress() }

// progressBarriers makes ch's barriers progress s while they wait, if ch
// and s support it; the returned function undoes it.
func progressBarriers(ch oob, s side) func() {
	b, ok := ch.(barrierProgress)
	p, ok2 := s.(progressor)
	if !ok || !ok2 {
		return func() {}
	}
	b.setBarrierProgress(p.progress)
	return func() { b.setBarrierProgress(nil) }
}
