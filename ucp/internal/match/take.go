package match

// TakeRecv is Arrive for a message that needs no Msg of its own unless it
// is unexpected: if matching is active and a posted receive matches tag,
// the earliest posted one is removed and returned; otherwise nothing
// changes and TakeRecv returns nil, and the caller hands the message to
// Queue. An eager receiver so finds its posted receive before it takes
// (and later frees) the memory of an unexpected message.
func (m *Matcher) TakeRecv(tag uint64) *Recv {
	if m.npending != 0 || m.nrecv == 0 {
		return nil
	}
	var r *Recv
	if m.wild.head == nil {
		r = m.findExact(tag) // only exact receives: the tag's bucket (inlined)
	} else {
		r = m.findRecv(tag)
	}
	if r != nil {
		m.unlinkRecv(r)
	}
	return r
}

// Queue queues msg as unexpected (in arrival order) after TakeRecv found
// no posted receive for it. Queuing a message that is already queued
// panics.
func (m *Matcher) Queue(msg *Msg) {
	if msg.queued {
		panic("match: Queue of a message that is already queued")
	}
	m.queueMsg(msg)
}

// AnyDown reports whether some source failed or is gone: only then can
// CheckPosted have something to say, so a receiver asks this (inlined)
// first.
func (m *Matcher) AnyDown() bool { return len(m.failed)+m.ndown != 0 }
