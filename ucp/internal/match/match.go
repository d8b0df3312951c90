package match

// Src identifies the endpoint a message came from. The worker assigns small
// integers; the matcher uses them only as keys.
type Src uint32

// Mode says what the matcher does when a source fails.
type Mode int

const (
	// Suspend (the default) stops matching while a failure is pending, i.e.
	// until Resume is called or every pending failed source is purged.
	Suspend Mode = iota
	// NeverSuspend keeps matching; Fail returns the receives that can only
	// match the failed source.
	NeverSuspend
)

// String returns the mode's name.
func (md Mode) String() string {
	switch md {
	case Suspend:
		return "Suspend"
	case NeverSuspend:
		return "NeverSuspend"
	}
	return "Mode(?)"
}

// Config configures a Matcher.
type Config struct {
	// Mode is the failure mode; the zero value is Suspend.
	Mode Mode
	// SourceMask selects the tag bits that carry the sender's rank. Zero
	// means the layout is unknown: every receive is then a wildcard with
	// respect to sources.
	SourceMask uint64
}

const exactMask = ^uint64(0)

// Recv is a posted receive. The worker embeds it in (or points to it from)
// its request and keeps it alive while it is posted. A Recv may be reused
// once it is no longer posted (matched, canceled, or returned by Fail,
// Purge or Check).
type Recv struct {
	Tag, Mask uint64
	// Data is the worker's (its request); the matcher never looks at it.
	Data any

	sprev, snext *Recv // exact-tag bucket or wildcard list, post order
	seq          uint64
	posted       bool
	told         []Src // failed sources this receive has been told of
}

// Posted reports whether r is queued in a matcher.
func (r *Recv) Posted() bool { return r.posted }

func (r *Recv) matches(tag uint64) bool { return (tag^r.Tag)&r.Mask == 0 }

// Msg is an arrived message (eager data or a rendezvous announcement) that
// has not been matched. The worker owns it and keeps it alive while it is
// queued.
type Msg struct {
	Src Src
	Tag uint64
	// Data is the worker's (payload, rendezvous descriptor, ...).
	Data any

	gprev, gnext *Msg // all unexpected messages, arrival order
	bprev, bnext *Msg // bucket of its tag, arrival order
	queued       bool
}

// Queued reports whether msg is held by a matcher as unexpected.
func (msg *Msg) Queued() bool { return msg.queued }

// Pair is a receive and the message it matched.
type Pair struct {
	Recv *Recv
	Msg  *Msg
}

const bucketBits = 10

func bucket(tag uint64) uint64 { return (tag * 0x9E3779B97F4A7C15) >> (64 - bucketBits) }

type recvList struct{ head, tail *Recv }

type msgList struct{ head, tail *Msg }

type srcState struct {
	tag     uint64 // tag & SourceMask, valid if known
	known   bool
	failed  bool
	pending bool
	gone    bool // purged: no message will come from it
}

// rankState counts the sources whose source tag is one value (a rank):
// live ones (known, neither failed nor gone) and down ones (failed or
// gone), the latter in ascending order.
type rankState struct {
	live int
	down []Src
}

// Matcher is a tag matcher: posted receives and unexpected messages. It
// is not safe for concurrent use; the worker serializes calls. PostRecv,
// Arrive, Probe, CancelRecv and RemoveMsg never allocate.
type Matcher struct {
	cfg Config
	seq uint64

	wild  recvList // posted receives whose mask is not all ones
	exact [1 << bucketBits]recvList
	nrecv int

	unexp  msgList // all unexpected messages (g links)
	ubuck  [1 << bucketBits]msgList
	nunexp int

	srcs     map[Src]*srcState
	failed   []Src // failed, not purged; ascending
	npending int   // failed sources whose failure is pending (Suspend mode)

	// by source tag, sources with a known tag (SourceMask != 0 only)
	ranks map[uint64]*rankState
	ndown int // sources in some rankState.down
}

// New returns an empty matcher.
func New(cfg Config) *Matcher {
	return &Matcher{cfg: cfg, srcs: make(map[Src]*srcState), ranks: make(map[uint64]*rankState)}
}

// Config returns the matcher's configuration.
func (m *Matcher) Config() Config { return m.cfg }

// Suspended reports whether matching is stopped: Suspend mode and at least
// one failed source neither acknowledged by Resume nor purged.
func (m *Matcher) Suspended() bool { return m.npending > 0 }

// Len returns the number of posted receives and of unexpected messages.
func (m *Matcher) Len() (posted, unexpected int) { return m.nrecv, m.nunexp }

// PostRecv posts r. If matching is active and an unexpected message
// matches r, the earliest arrived one is removed and returned and r is not
// queued. Otherwise r is queued (in post order) and PostRecv returns nil.
// Posting a receive that is already posted panics.
func (m *Matcher) PostRecv(r *Recv) *Msg {
	if r.posted {
		panic("match: PostRecv of a receive that is already posted")
	}
	r.told = r.told[:0]
	if m.npending == 0 && m.nunexp != 0 {
		if msg := m.findMsg(r); msg != nil {
			m.unlinkMsg(msg)
			return msg
		}
	}
	m.queueRecv(r)
	return nil
}

// Arrive hands an arrived message to the matcher. If matching is active
// and a posted receive matches msg, the earliest posted one is removed and
// returned and msg is not queued. Otherwise msg is queued as unexpected (in
// arrival order) and Arrive returns nil. Handing over a message that is
// already queued panics.
func (m *Matcher) Arrive(msg *Msg) *Recv {
	if msg.queued {
		panic("match: Arrive of a message that is already queued")
	}
	if m.npending == 0 {
		if r := m.findRecv(msg.Tag); r != nil {
			m.unlinkRecv(r)
			return r
		}
	}
	m.queueMsg(msg)
	return nil
}

// Probe returns the earliest arrived unexpected message whose tag matches
// (msg.Tag^tag)&mask == 0, or nil. With remove the message is taken out of
// the matcher (MPI_Mprobe); the caller then owns it. While matching is
// suspended Probe returns nil: a message seen now could belong to a
// receive posted earlier once matching resumes.
func (m *Matcher) Probe(tag, mask uint64, remove bool) *Msg {
	if m.npending > 0 {
		return nil
	}
	msg := m.findMsgTag(tag, mask)
	if msg != nil && remove {
		m.unlinkMsg(msg)
	}
	return msg
}

// CancelRecv removes r if it is posted and reports whether it was.
func (m *Matcher) CancelRecv(r *Recv) bool {
	if !r.posted {
		return false
	}
	m.unlinkRecv(r)
	return true
}

// RemoveMsg removes msg if it is queued as unexpected and reports whether
// it was.
func (m *Matcher) RemoveMsg(msg *Msg) bool {
	if !msg.queued {
		return false
	}
	m.unlinkMsg(msg)
	return true
}

// findMsg returns the earliest unexpected message that r matches.
func (m *Matcher) findMsg(r *Recv) *Msg { return m.findMsgTag(r.Tag, r.Mask) }

func (m *Matcher) findMsgTag(tag, mask uint64) *Msg {
	if mask == exactMask {
		for msg := m.ubuck[bucket(tag)].head; msg != nil; msg = msg.bnext {
			if msg.Tag == tag {
				return msg
			}
		}
		return nil
	}
	for msg := m.unexp.head; msg != nil; msg = msg.gnext {
		if (msg.Tag^tag)&mask == 0 {
			return msg
		}
	}
	return nil
}

// findRecv returns the earliest posted receive that matches tag.
func (m *Matcher) findRecv(tag uint64) *Recv {
	best := m.findExact(tag)
	for r := m.wild.head; r != nil; r = r.snext {
		if best != nil && r.seq > best.seq {
			break
		}
		if r.matches(tag) {
			return r
		}
	}
	return best
}

// findExact returns the oldest exact receive posted for tag, or nil.
func (m *Matcher) findExact(tag uint64) *Recv {
	r := m.exact[bucket(tag)].head
	for r != nil && r.Tag != tag {
		r = r.snext
	}
	return r
}

func (m *Matcher) queueRecv(r *Recv) {
	m.seq++
	r.seq = m.seq
	r.posted = true
	m.nrecv++
	l := &m.wild
	if r.Mask == exactMask {
		l = &m.exact[bucket(r.Tag)]
	}
	r.snext = nil
	r.sprev = l.tail
	if l.tail != nil {
		l.tail.snext = r
	} else {
		l.head = r
	}
	l.tail = r
}

func (m *Matcher) unlinkRecv(r *Recv) {
	l := &m.wild
	if r.Mask == exactMask {
		l = &m.exact[bucket(r.Tag)]
	}
	if r.sprev != nil {
		r.sprev.snext = r.snext
	} else {
		l.head = r.snext
	}
	if r.snext != nil {
		r.snext.sprev = r.sprev
	} else {
		l.tail = r.sprev
	}
	r.sprev, r.snext = nil, nil
	r.posted = false
	m.nrecv--
}

func (m *Matcher) queueMsg(msg *Msg) {
	msg.queued = true
	m.nunexp++
	msg.gnext = nil
	msg.gprev = m.unexp.tail
	if m.unexp.tail != nil {
		m.unexp.tail.gnext = msg
	} else {
		m.unexp.head = msg
	}
	m.unexp.tail = msg
	l := &m.ubuck[bucket(msg.Tag)]
	msg.bnext = nil
	msg.bprev = l.tail
	if l.tail != nil {
		l.tail.bnext = msg
	} else {
		l.head = msg
	}
	l.tail = msg
}

func (m *Matcher) unlinkMsg(msg *Msg) {
	if msg.gprev != nil {
		msg.gprev.gnext = msg.gnext
	} else {
		m.unexp.head = msg.gnext
	}
	if msg.gnext != nil {
		msg.gnext.gprev = msg.gprev
	} else {
		m.unexp.tail = msg.gprev
	}
	l := &m.ubuck[bucket(msg.Tag)]
	if msg.bprev != nil {
		msg.bprev.bnext = msg.bnext
	} else {
		l.head = msg.bnext
	}
	if msg.bnext != nil {
		msg.bnext.bprev = msg.bprev
	} else {
		l.tail = msg.bprev
	}
	msg.gprev, msg.gnext, msg.bprev, msg.bnext = nil, nil, nil, nil
	msg.queued = false
	m.nunexp--
}

// Drain removes every posted receive (returned in post order) and every
// unexpected message (returned in arrival order), for a worker that
// closes: it completes the receives as canceled and frees the messages.
// Failure state (failed and pending sources, source tags) is kept.
func (m *Matcher) Drain() (recvs []*Recv, msgs []*Msg) {
	recvs = m.postedOrder()
	for _, r := range recvs {
		m.unlinkRecv(r)
	}
	for msg := m.unexp.head; msg != nil; {
		next := msg.gnext
		m.unlinkMsg(msg)
		msgs = append(msgs, msg)
		msg = next
	}
	return recvs, msgs
}
