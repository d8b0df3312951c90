// Package failover is the policy and the pure logic that ucp consults when
// a lane of an endpoint fails while its peer is still reachable: which
// faults may fail over and to which lanes, how each lane's health moves
// (up, suspect, failed, probing), the per-endpoint sequence numbers with
// their cumulative acknowledgements, the sender's replay log, the
// receiver's duplicate filter and reorder window, and the event reported
// to the user.
//
// Nothing here sends a byte, starts a goroutine or reads a clock: ucp owns
// the lanes, the wire and the timers, and passes in what it saw (a status,
// a probe answer, the time). Every type is owned by one endpoint and used
// from the goroutine that progresses its worker; none is safe for
// concurrent use.
//
// The shape, after DESIGN.md's rule 5: every ucp message of an endpoint
// carries a sequence number from one [SendLog], whatever lane carries it;
// the receiver's [RecvWindow] delivers each number once and in order and
// acknowledges cumulatively. When a lane fails with a status that
// [Policy.ShouldFailOver] accepts, the sender picks another lane
// ([Policy.Select]), asks the peer over it what it has delivered, and
// replays only the rest from the log ([SendLog.Replay]). [MsgLog] is the
// same log for messages kept as bytes, written once into cells that keep
// their buffers across acknowledgements: ucp's sequenced channel sends
// every message from its cell. An atomic is never applied twice and its
// result is never lost: its request and the target's answer are both
// sequenced messages, each delivered once and replayed from its sender's
// log after a failover, so the answer of an atomic the target applied
// reaches the initiator over the new lane. Only an atomic still
// unanswered when its endpoint fails (no lane left to ask) completes
// with [ErrOutcomeUnknown]. A dead peer (uct.ErrPeerFailed) is never
// failed over.
package failover
