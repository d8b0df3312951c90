package ucp

// WorkerStats are counters of a worker since it was created.
type WorkerStats struct {
	// FailedDrops counts the messages that arrived from a peer after
	// its endpoint had failed (the peer's process may still be alive and
	// sending over a lane that still delivers): they are dropped, not
	// queued as unexpected, handed to a handler or fetched.
	FailedDrops DropCounts
	// ClosedDrops counts the tag and active messages that arrived for an
	// endpoint that is closed or purged (or for no endpoint).
	ClosedDrops uint64
	// AMNoHandler counts active messages dropped because no handler was
	// installed for their id.
	AMNoHandler uint64
	// AMReassemblyDrops counts active messages and eager tag messages in
	// fragments that failed because they would exceed the reassembly limits
	// (Config.AMReassemblyMax, AMReassemblyPeerMax).
	AMReassemblyDrops uint64
	// LaneMismatch counts messages dropped because they named an
	// endpoint other than the one whose connection delivered them.
	LaneMismatch uint64
	// FailedOver and FailedBack count the lane switches of failover
	// (failover.Event); Replayed the messages sent again on a new lane;
	// Duplicates the sequenced messages the receiver dropped as already
	// delivered.
	FailedOver, FailedBack uint64
	Replayed, Duplicates   uint64
	// AtomicsApplied counts the peers' atomics this worker applied to
	// its memory as active messages (sequenced endpoints).
	AtomicsApplied uint64
	// Resyncs counts failover syncs sent again: unanswered for a probe
	// interval, or the AM lane moved from the lane they went on.
	Resyncs uint64

	// Probes counts the per-lane probes of failover (probe.go).
	Probes ProbeStats

	// Rails counts the rail gate's choices between striping and one
	// rail (railgate.go).
	Rails RailStats
}

// DropCounts counts dropped messages by kind.
type DropCounts struct {
	TagEager uint64 // eager tag messages
	TagRndv  uint64 // tag rendezvous announcements (RTS); no data was fetched
	AM       uint64 // active messages in one fragment
	AMFrag   uint64 // fragments of larger active messages
	AMRndv   uint64 // rendezvous active messages; no data was fetched
}

// Total returns the sum of the counts.
func (d DropCounts) Total() uint64 { return d.TagEager + d.TagRndv + d.AM + d.AMFrag + d.AMRndv }

// Stats returns the worker's counters.
func (w *Worker) Stats() WorkerStats {
	w.lock()
	defer w.unlock()
	return w.stats
}
