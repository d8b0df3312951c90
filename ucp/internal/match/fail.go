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
//
// Setting a source tag is how a source (re)joins: a gone (purged) s is
// no longer gone, and every other gone source with the same source tag
// is forgotten (its state, source tag included, is dropped), so that
// receives for that rank wait for s instead of failing at once. Failed
// sources that were not purged are kept.
func (m *Matcher) SetSourceTag(s Src, tag uint64) {
	st := m.src(s)
	m.unrank(s, st)
	st.tag = tag & m.cfg.SourceMask
	st.known = true
	st.gone = false
	if m.cfg.SourceMask != 0 {
		m.forgetGone(st.tag, s)
	}
	m.rank(s, st)
}

// forgetGone drops the state of every gone source of rank tag but keep.
func (m *Matcher) forgetGone(tag uint64, keep Src) {
	rs := m.ranks[tag]
	if rs == nil {
		return
	}
	for _, d := range slices.Clone(rs.down) {
		if ds := m.srcs[d]; d != keep && ds.gone {
			m.unrank(d, ds)
			delete(m.srcs, d)
		}
	}
}

// unrank takes s out of the count of its rank (before its state changes).
func (m *Matcher) unrank(s Src, st *srcState) {
	if m.cfg.SourceMask == 0 || !st.known {
		return
	}
	rs := m.ranks[st.tag]
	if rs == nil {
		return
	}
	if st.failed || st.gone {
		if i, ok := slices.BinarySearch(rs.down, s); ok {
			rs.down = slices.Delete(rs.down, i, i+1)
			m.ndown--
		}
	} else {
		rs.live--
	}
	if rs.live == 0 && len(rs.down) == 0 {
		delete(m.ranks, st.tag)
	}
}

// rank counts s in its rank (after its state changed).
func (m *Matcher) rank(s Src, st *srcState) {
	if m.cfg.SourceMask == 0 || !st.known {
		return
	}
	rs := m.ranks[st.tag]
	if rs == nil {
		rs = &rankState{}
		m.ranks[st.tag] = rs
	}
	if st.failed || st.gone {
		i, _ := slices.BinarySearch(rs.down, s)
		rs.down = slices.Insert(rs.down, i, s)
		m.ndown++
	} else {
		rs.live++
	}
}

// dead reports whether no message can match r any more: SourceMask != 0,
// r.Mask covers it, every source whose source tag is r's rank
// (r.Tag & SourceMask) is failed or gone and there is at least one, and
// no unexpected message matches r. It returns the first such source.
func (m *Matcher) dead(r *Recv) (Src, bool) {
	sm := m.cfg.SourceMask
	if m.ndown == 0 || sm == 0 || r.Mask&sm != sm {
		return 0, false
	}
	rs := m.ranks[r.Tag&sm]
	if rs == nil || rs.live > 0 || len(rs.down) == 0 || m.findMsg(r) != nil {
		return 0, false
	}
	return rs.down[0], true
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

// Gone reports whether s has been purged and has not rejoined (by
// SetSourceTag or Fail) nor been forgotten (see Purge).
func (m *Matcher) Gone(s Src) bool {
	st := m.srcs[s]
	return st != nil && st.gone
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
// that Resume acknowledged becomes pending again. A gone source that
// fails again is failed, no longer gone.
//
// Suspend mode: the failure of s becomes pending and matching stops until
// Resume is called or every pending failed source is purged. Fail returns,
// in post order, the posted receives that could match s and had not been
// told of s before, and marks them told of s. The worker completes none of
// them; it tells each one that a failure is pending.
//
// NeverSuspend mode: matching goes on. Fail removes and returns, in post
// order, the posted receives that can only match s and that no message
// can match any more (no live source shares the source tag of s; see
// CheckPosted); the worker completes them with peer-failed.
func (m *Matcher) Fail(s Src) []*Recv {
	st := m.src(s)
	if !st.failed {
		m.unrank(s, st)
		st.failed, st.gone = true, false
		m.rank(s, st)
		i, _ := slices.BinarySearch(m.failed, s)
		m.failed = slices.Insert(m.failed, i, s)
	}
	var out []*Recv
	if m.cfg.Mode == NeverSuspend {
		for _, r := range m.postedOrder() {
			if m.onlyMatch(r, st) {
				if _, dead := m.dead(r); dead {
					m.unlinkRecv(r)
					out = append(out, r)
				}
			}
		}
		return out
	}
	if !st.pending {
		st.pending = true
		m.npending++
	}
	for _, r := range m.postedOrder() {
		if m.couldMatch(r, st) && !r.toldOf(s) {
			r.told = append(r.told, s)
			out = append(out, r)
		}
	}
	return out
}

// CheckPosted tells the worker what a queued receive must learn about
// failed and gone sources; the worker calls it after PostRecv returned nil
// (and may call it at any time for a posted receive). Sources are
// considered in ascending order and the first one concerned is returned.
//
// Dead receive, in any mode, suspended or not: r names a rank (its Mask
// covers SourceMask), every source with that source tag is failed or gone
// and there is at least one, and no unexpected message matches r (data a
// source sent before it failed stays receivable). No message can match r
// any more: r is removed and NoticePeerFailed is returned with the first
// such source. A receive naming a rank no source has (yet) is not dead.
//
// Otherwise, while matching is suspended: if r could match a source whose
// failure is pending and r has not been told of it, r is marked told of
// every such source and NoticeFailedPending is returned with the first
// one.
//
// Otherwise, or if r is not posted, NoticeNone.
func (m *Matcher) CheckPosted(r *Recv) (Notice, Src) {
	if !r.posted || len(m.failed) == 0 && m.ndown == 0 {
		return NoticeNone, 0
	}
	if s, dead := m.dead(r); dead {
		m.unlinkRecv(r)
		return NoticePeerFailed, s
	}
	if m.npending == 0 {
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
	if m.nunexp == 0 {
		return nil
	}
	for _, r := range m.postedOrder() {
		if m.nunexp == 0 {
			break
		}
		if msg := m.findMsg(r); msg != nil {
			m.unlinkMsg(msg)
			m.unlinkRecv(r)
			pairs = append(pairs, Pair{r, msg})
		}
	}
	return pairs
}

// Purge removes source s, failed or not, and makes it gone:
//   - msgs: the unexpected messages from s, removed, in arrival order; the
//     worker frees them (and drops rendezvous state);
//   - s is no longer failed but gone, and no posted receive is marked told
//     of s; its source tag is kept, and every other gone source with
//     that source tag is forgotten (as by SetSourceTag): a rank keeps at
//     most one gone source, the last purged. Without a SourceMask, or if
//     the source tag of s is unknown, s is forgotten at once (no receive
//     can be dead for it): Gone(s) is false and its source tag unknown;
//   - onlyS: the posted receives that can only match s and are now dead
//     (see CheckPosted: no live source shares the source tag of s and no
//     unexpected message matches them), removed, in post order; the
//     worker completes them with peer-failed. Receives posted later that
//     can only match s are dead too, until a source takes that source tag
//     (SetSourceTag);
//   - if this leaves no pending failure while matching was suspended,
//     matching restarts as in Resume and pairs are the pairs made.
func (m *Matcher) Purge(s Src) (onlyS []*Recv, msgs []*Msg, pairs []Pair) {
	st := m.src(s)
	wasSuspended := m.npending > 0
	for msg := m.unexp.head; msg != nil; {
		next := msg.gnext
		if msg.Src == s {
			m.unlinkMsg(msg)
			msgs = append(msgs, msg)
		}
		msg = next
	}
	m.unrank(s, st)
	if st.failed {
		st.failed = false
		if i, ok := slices.BinarySearch(m.failed, s); ok {
			m.failed = slices.Delete(m.failed, i, i+1)
		}
		if st.pending {
			st.pending = false
			m.npending--
		}
	}
	st.gone = true
	if m.cfg.SourceMask == 0 || !st.known {
		// s has no rank: no receive can be dead for it
		delete(m.srcs, s)
	} else {
		m.rank(s, st)
		m.forgetGone(st.tag, s)
	}
	for _, r := range m.postedOrder() {
		if i := slices.Index(r.told, s); i >= 0 {
			r.told = slices.Delete(r.told, i, i+1)
		}
		if m.onlyMatch(r, st) {
			if _, dead := m.dead(r); dead {
				m.unlinkRecv(r)
				onlyS = append(onlyS, r)
			}
		}
	}
	if wasSuspended && m.npending == 0 {
		pairs = m.rematch()
	}
	return onlyS, msgs, pairs
}
