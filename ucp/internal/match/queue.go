package match

// Frag is the state of a message that arrives in pieces (the fragments of
// a large eager message, an ongoing rendezvous) keyed by its source and
// the sender's message id. The worker owns it, like Recv and Msg.
type Frag struct {
	Src Src
	ID  uint64
	// Data is the worker's (assembly buffer, rendezvous descriptor, ...).
	Data any

	prev, next *Frag // per-source list, insertion order
	queued     bool
}

// Queued reports whether f is held by a Queue.
func (f *Frag) Queued() bool { return f.queued }

// FragKey identifies a Frag: sender and the sender's message id.
type FragKey struct {
	Src Src
	ID  uint64
}

type fragList struct {
	head, tail *Frag
	n          int
}

// Queue holds in-flight Frags by (Src, ID), with removal of everything
// from one source for Purge. Add, Get, Take and Remove do not allocate in
// steady state (a source's list is allocated once, the key map grows to
// its high-water mark). Not safe for concurrent use.
type Queue struct {
	byKey map[FragKey]*Frag
	bySrc map[Src]*fragList
}

// NewQueue returns an empty Queue.
func NewQueue() *Queue {
	return &Queue{byKey: make(map[FragKey]*Frag), bySrc: make(map[Src]*fragList)}
}

// Len returns the number of queued Frags.
func (q *Queue) Len() int { return len(q.byKey) }

// LenSrc returns the number of queued Frags from s.
func (q *Queue) LenSrc(s Src) int {
	if l := q.bySrc[s]; l != nil {
		return l.n
	}
	return 0
}

// Add queues f under (f.Src, f.ID). It returns false, and queues nothing,
// if that key is already queued. Adding a Frag that is already queued
// panics.
func (q *Queue) Add(f *Frag) bool {
	if f.queued {
		panic("match: Queue.Add of a Frag that is already queued")
	}
	k := FragKey{f.Src, f.ID}
	if _, dup := q.byKey[k]; dup {
		return false
	}
	q.byKey[k] = f
	l := q.bySrc[f.Src]
	if l == nil {
		l = &fragList{}
		q.bySrc[f.Src] = l
	}
	f.queued = true
	f.next = nil
	f.prev = l.tail
	if l.tail != nil {
		l.tail.next = f
	} else {
		l.head = f
	}
	l.tail = f
	l.n++
	return true
}

// Get returns the Frag queued under (s, id), or nil.
func (q *Queue) Get(s Src, id uint64) *Frag { return q.byKey[FragKey{s, id}] }

// Take removes and returns the Frag queued under (s, id), or nil.
func (q *Queue) Take(s Src, id uint64) *Frag {
	f := q.byKey[FragKey{s, id}]
	if f != nil {
		q.unlink(f)
	}
	return f
}

// Remove removes f if it is queued and reports whether it was.
func (q *Queue) Remove(f *Frag) bool {
	if !f.queued {
		return false
	}
	q.unlink(f)
	return true
}

// Purge removes every Frag from s and returns them in the order they were
// added.
func (q *Queue) Purge(s Src) []*Frag {
	l := q.bySrc[s]
	if l == nil || l.n == 0 {
		return nil
	}
	out := make([]*Frag, 0, l.n)
	for f := l.head; f != nil; {
		next := f.next
		q.unlink(f)
		out = append(out, f)
		f = next
	}
	return out
}

func (q *Queue) unlink(f *Frag) {
	delete(q.byKey, FragKey{f.Src, f.ID})
	l := q.bySrc[f.Src]
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		l.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		l.tail = f.prev
	}
	l.n--
	f.prev, f.next = nil, nil
	f.queued = false
}
