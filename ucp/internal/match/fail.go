package match

import "slices"

// Notice is what CheckPosted tells the worker about a queued receive.
type Notice int

const (
	// NoticeNone: nothing to tell; the receive stays posted.
	NoticeNone Notice = iota
	// NoticeFailedPending: the receive could match a source whose failure
	// is pending and had not been told of it (ULFM PROC_FAILED_PENDING).
	// It stays posted.
	NoticeFailedPending
	// NoticePeerFailed: the receive can only match a failed source and
	// matching is active, so nothing can match it any more. It has been
	// removed; the worker completes it with peer-failed.
	NoticePeerFailed
)

// String returns the notice's name.
func (n Notice) String() string {
	switch n {
	case NoticeNone:
		return "None"
	case NoticeFailedPending:
		return "FailedPending"
	case NoticePeerFailed:
		return "PeerFailed"
	}
	return "Notice(?)"
}

func (m *Matcher) src(s Src) *srcState {
	st := m.srcs[s]
	if st == nil {
		st = &srcState{}
		m.srcs[s] = st
	}
	return st
}

// SetSourceTag records the rank bits of source s: tag & SourceMask. Until
// it is called the source tag of s is unknown and every receive counts as
// a wildcard with respect to s. It may be called again to change them.
// Source tags of different sources should differ; otherwise a receive
// "can only match" each of them.
func (m *Matcher) SetSourceTag(s Src, tag uint64) {
	st := m.src(s)
	st.tag = tag & m.cfg.SourceMask
	st.known = true
}

// SourceTag returns the rank bits of s and whether they are known.
func (m *Matcher) SourceTag(s Src) (tag uint64, known bool) {
	if st := m.srcs[s]; st != nil && st.known {
		return st.tag, true
	}
	return 0, false
}

// Failed reports whether s has failed and not been purged.
func (m *Matcher) Failed(s Src) bool {
	st := m.srcs[s]
	return st != nil && st.failed
}

// couldMatch reports whether a message from s could match r.
func (m *Matcher) couldMatch(r *Recv, st *srcState) bool {
	if m.cfg.SourceMask == 0 || st == nil || !st.known {
		return true
	}
	return (r.Tag^st.tag)&r.Mask&m.cfg.SourceMask == 0
}

// onlyMatch reports whether r can only match messages from s.
func (m *Matcher) onlyMatch(r *Recv, st *srcState) bool {
	sm := m.cfg.SourceMask
	return sm != 0 && st != nil && st.known && r.Mask&sm == sm && (r.Tag^st.tag)&sm == 0
}

// CanOnlyMatch reports whether receive r can only match messages from s.
func (m *Matcher) CanOnlyMatch(r *Recv, s Src) bool { return m.onlyMatch(r, m.srcs[s]) }

// CouldMatch reports whether receive r could match a message from s.
func (m *Matcher) CouldMatch(r *Recv, s Src) bool { return m.couldMatch(r, m.srcs[s]) }

func (r *Recv) toldOf(s Src) bool { return slices.Contains(r.told, s) }

// Fail marks s failed. It may be called again for a source that is
// already failed: nothing is told twice, and in Suspend mode a failure
// that Resume acknowledged becomes pending again.
//
// Suspend mode: the failure of s becomes pending and matching stops until
// Resume is called or every pending failed source is purged. Fail returns,
// in post order, the posted receives that could match s and had not been
// told of s before, and marks them told of s. The worker completes none of
// them; it tells each one that a failure is pending.
//
// NeverSuspend mode: matching goes on. Fail removes and returns, in post
// order, the posted receives that can only match s; the worker completes
// them with peer-failed.
func (m *Matcher) Fail(s Src) []*Recv {
	st := m.src(s)
	if !st.failed {
		st.failed = true
		i, _ := slices.BinarySearch(m.failed, s)
		m.failed = slices.Insert(m.failed, i, s)
	}
	var out []*Recv
	if m.cfg.Mode == NeverSuspend {
		for r := m.posted.head; r != nil; {
			next := r.gnext
			if m.onlyMatch(r, st) {
				m.unlinkRecv(r)
				out = append(out, r)
			}
			r = next
		}
		return out
	}
	if !st.pending {
		st.pending = true
		m.npending++
	}
	for r := m.posted.head; r != nil; r = r.gnext {
		if m.couldMatch(r, st) && !r.toldOf(s) {
			r.told = append(r.told, s)
			out = append(out, r)
		}
	}
	return out
}

// CheckPosted tells the worker what a queued receive must learn about
// failed sources; the worker calls it after PostRecv returned nil (and may
// call it at any time for a posted receive). Sources are considered in
// ascending order and the first one concerned is returned.
//
// While matching is suspended: if r could match a source whose failure is
// pending and r has not been told of it, r is marked told of every such
// source and NoticeFailedPending is returned with the first one.
//
// While matching is active: if r can only match a failed (not purged)
// source, r is removed and NoticePeerFailed is returned with that source.
//
// Otherwise, or if r is not posted, NoticeNone.
func (m *Matcher) CheckPosted(r *Recv) (Notice, Src) {
	if len(m.failed) == 0 || !r.posted {
		return NoticeNone, 0
	}
	if m.npending == 0 {
		for _, s := range m.failed {
			if m.onlyMatch(r, m.srcs[s]) {
				m.unlinkRecv(r)
				return NoticePeerFailed, s
			}
		}
		return NoticeNone, 0
	}
	n, first := NoticeNone, Src(0)
	for _, s := range m.failed {
		st := m.srcs[s]
		if st.pending && m.couldMatch(r, st) && !r.toldOf(s) {
			r.told = append(r.told, s)
			if n == NoticeNone {
				n, first = NoticeFailedPending, s
			}
		}
	}
	return n, first
}

// Resume acknowledges every pending failure and restarts matching. The
// posted receives, in post order, each take the earliest arrived
// unexpected message they match; the pairs made are removed and returned
// in that order. Messages from failed sources stay matchable: their data
// arrived before the failure. Failed sources stay failed until purged.
// Resume while matching is active does nothing and returns nil.
func (m *Matcher) Resume() []Pair {
	if m.npending == 0 {
		return nil
	}
	for _, s := range m.failed {
		m.srcs[s].pending = false
	}
	m.npending = 0
	return m.rematch()
}

func (m *Matcher) rematch() []Pair {
	var pairs []Pair
	for r := m.posted.head; r != nil && m.nunexp > 0; {
		next := r.gnext
		if msg := m.findMsg(r); msg != nil {
			m.unlinkMsg(msg)
			m.unlinkRecv(r)
			pairs = append(pairs, Pair{r, msg})
		}
		r = next
	}
	return pairs
}

// Purge removes source s, failed or not:
//   - onlyS: the posted receives that can only match s, removed, in post
//     order; the worker completes them with peer-failed;
//   - msgs: the unexpected messages from s, removed, in arrival order; the
//     worker frees them (and drops rendezvous state);
//   - s is no longer failed and no posted receive is marked told of s;
//     its source tag is kept;
//   - if this leaves no pending failure while matching was suspended,
//     matching restarts as in Resume and pairs are the pairs made.
func (m *Matcher) Purge(s Src) (onlyS []*Recv, msgs []*Msg, pairs []Pair) {
	st := m.srcs[s]
	wasSuspended := m.npending > 0
	for r := m.posted.head; r != nil; {
		next := r.gnext
		if m.onlyMatch(r, st) {
			m.unlinkRecv(r)
			onlyS = append(onlyS, r)
		} else if i := slices.Index(r.told, s); i >= 0 {
			r.told = slices.Delete(r.told, i, i+1)
		}
		r = next
	}
	for msg := m.unexp.head; msg != nil; {
		next := msg.gnext
		if msg.Src == s {
			m.unlinkMsg(msg)
			msgs = append(msgs, msg)
		}
		msg = next
	}
	if st != nil && st.failed {
		st.failed = false
		if i, ok := slices.BinarySearch(m.failed, s); ok {
			m.failed = slices.Delete(m.failed, i, i+1)
		}
		if st.pending {
			st.pending = false
			m.npending--
		}
	}
	if wasSuspended && m.npending == 0 {
		pairs = m.rematch()
	}
	return onlyS, msgs, pairs
}
