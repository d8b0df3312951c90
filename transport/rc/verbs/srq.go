package verbs

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// SRQAttr are an SRQ's attributes (ibv_srq_attr).
type SRQAttr struct {
	MaxWR  int
	MaxSGE int
	// Limit arms the SRQ limit event: when the number of posted receives
	// drops below Limit, an EventSRQLimitReached is posted and the limit
	// is disarmed (set to 0). 0 means not armed.
	Limit int
}

// SRQAttrMask says which SRQAttr fields ModifySRQ uses (ibv_srq_attr_mask).
type SRQAttrMask uint8

const (
	SRQAttrMaxWR SRQAttrMask = 1 << iota
	SRQAttrLimit
)

// SRQ is a shared receive queue (ibv_srq).
type SRQ struct {
	d      *Device
	pd     *PD
	id     int
	maxSGE int
	limit  int
	rq     recvQueue
	users  int
	closed bool
}

// CreateSRQ creates a shared receive queue.
func (pd *PD) CreateSRQ(attr SRQAttr) (*SRQ, error) {
	if attr.MaxWR <= 0 || attr.MaxWR > deviceAttr.MaxSRQWR || attr.MaxSGE < 0 || attr.MaxSGE > deviceAttr.MaxSGE ||
		attr.Limit < 0 || attr.Limit > attr.MaxWR {
		return nil, fmt.Errorf("verbs: create srq: %+v: %w", attr, uct.ErrInvalidParam)
	}
	if attr.MaxSGE == 0 {
		attr.MaxSGE = 1
	}
	d := pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || pd.closed {
		return nil, fmt.Errorf("verbs: create srq: %w", uct.ErrClosed)
	}
	d.srqSeq++
	s := &SRQ{d: d, pd: pd, id: d.srqSeq, maxSGE: attr.MaxSGE, limit: attr.Limit}
	s.rq.init(attr.MaxWR)
	pd.nobj++
	return s, nil
}

func (s *SRQ) name() string { return fmt.Sprintf("srq %d", s.id) }

// Modify changes the limit (SRQAttrLimit); resizing (SRQAttrMaxWR) is not
// supported.
func (s *SRQ) Modify(attr SRQAttr, mask SRQAttrMask) error {
	if mask&SRQAttrMaxWR != 0 {
		return fmt.Errorf("verbs: modify %s: resize: %w", s.name(), uct.ErrUnsupported)
	}
	if mask&^SRQAttrLimit != 0 {
		return fmt.Errorf("verbs: modify %s: mask %#x: %w", s.name(), mask, uct.ErrInvalidParam)
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if mask&SRQAttrLimit != 0 {
		if attr.Limit < 0 || attr.Limit > len(s.rq.ring) {
			return fmt.Errorf("verbs: modify %s: limit %d: %w", s.name(), attr.Limit, uct.ErrInvalidParam)
		}
		s.limit = attr.Limit
	}
	return nil
}

// Query returns the SRQ's attributes.
func (s *SRQ) Query() SRQAttr {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	return SRQAttr{MaxWR: len(s.rq.ring), MaxSGE: s.maxSGE, Limit: s.limit}
}

// PostRecv posts receive work requests to the SRQ (ibv_post_srq_recv).
func (s *SRQ) PostRecv(wrs ...RecvWR) (int, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("verbs: post srq recv: %w", uct.ErrClosed)
	}
	for i := range wrs {
		if len(wrs[i].SG) > s.maxSGE {
			return i, fmt.Errorf("verbs: post srq recv: %d SGEs > %d: %w", len(wrs[i].SG), s.maxSGE, uct.ErrInvalidParam)
		}
		if !s.rq.push(&wrs[i]) {
			return i, fmt.Errorf("verbs: post srq recv: queue full: %w", uct.ErrNoResource)
		}
	}
	return len(wrs), nil
}

// popLocked takes a receive and fires the limit event if it applies.
func (s *SRQ) popLocked() (recvWQE, bool) {
	w, ok := s.rq.pop()
	if ok && s.limit > 0 && s.rq.n < s.limit {
		s.limit = 0
		s.d.postEvent(uct.EventSRQLimitReached, s.name(), s, nil)
	}
	return w, ok
}

// destroy closes the SRQ, once, unless QPs use it (ErrBusy).
func (s *SRQ) destroy() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.users > 0 {
		return fmt.Errorf("verbs: destroy %s: %d QPs use it: %w", s.name(), s.users, uct.ErrBusy)
	}
	s.closed = true
	s.pd.nobj--
	return nil
}
