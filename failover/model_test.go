package failover

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// The model: one endpoint's sender and receiver joined by two ordered
// lanes (as rc queue pairs are), driven by a seeded random schedule that
// sends, delivers, acknowledges, fails the active lane and brings lanes
// back. A failing lane delivers a prefix of what it carries and loses the
// rest, or (a flap) holds it and delivers it late beside the replay. The
// receiver answers every atomic it applies with the value it fetched; the
// answers, like ucp's, are in the receiver's own log until the sender has
// them, so an answer lost with a failed lane is sent again over the new
// one. Every seed must end with every message delivered once and in
// order, and every atomic applied once and answered with the value it
// fetched.

type mkind uint8

const (
	mData mkind = iota
	mAtomic
)

type mmsg struct {
	kind mkind
	add  uint64 // atomic: the fetch-and-add operand
}

type packet struct {
	seq uint64
	m   mmsg
}

// reply goes from the receiver back to the sender on a lane.
type reply struct {
	ack     uint64 // cumulative
	atomic  uint64 // seq of an atomic answered (0: none)
	fetched uint64
}

type mlane struct {
	fwd  []packet
	back []reply
	h    *Health
	info Lane
}

type model struct {
	t     *testing.T
	rng   *rand.Rand
	pol   Policy
	now   time.Time
	lanes [2]*mlane
	act   int // the lane the sender uses

	// sender
	log      *SendLog[mmsg]
	sent     int
	total    int
	waiting  map[uint64]uint64 // atomic seq -> operand, answer not yet seen
	answered map[uint64]uint64 // atomic seq -> fetched value

	// receiver
	win     *RecvWindow[mmsg]
	counter uint64
	applied map[uint64]uint64 // atomic seq -> value it fetched when applied
	next    uint64            // next sequence number the receiver must deliver
	answers []uint64          // atomics delivered, their answers not sent yet
	late    []packet          // a flapped lane's packets, delivered late

	failovers, replayed int
	answersReplayed     int // atomic answers lost with a lane and sent again
}

func newModel(t *testing.T, seed uint64, total int) *model {
	m := &model{
		t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), pol: DefaultPolicy(),
		now: time.Unix(0, 0), log: NewSendLog[mmsg](32), total: total,
		waiting: map[uint64]uint64{}, answered: map[uint64]uint64{},
		win: NewRecvWindow[mmsg](8), applied: map[uint64]uint64{}, next: 1,
	}
	for i := range m.lanes {
		m.lanes[i] = &mlane{h: NewHealth(m.pol, m.now), info: Lane{Index: i, Transport: "rc", Device: fmt.Sprintf("veth%d", i)}}
	}
	return m
}

func (m *model) laneInfos() []Lane {
	out := make([]Lane, len(m.lanes))
	for i, l := range m.lanes {
		out[i] = l.info
		out[i].Health = l.h.State()
	}
	return out
}

func (m *model) deliver(seq uint64, msg mmsg) {
	if seq != m.next {
		m.t.Fatalf("delivered %d, expected %d", seq, m.next)
	}
	m.next++
	if msg.kind == mAtomic {
		if _, dup := m.applied[seq]; dup {
			m.t.Fatalf("atomic %d applied twice", seq)
		}
		old := m.counter
		m.counter += msg.add
		m.applied[seq] = old
		m.answers = append(m.answers, seq)
	}
}

// receive is the receiver taking one packet from lane l (nil: a late one).
func (m *model) receive(p packet, l *mlane) {
	_, err := m.win.Accept(p.seq, p.m, m.deliver)
	if err != nil && !errors.Is(err, ErrGap) {
		m.t.Fatal(err)
	}
	if l == nil || !l.h.State().Carries() {
		// a late packet, or one from a failed lane: answers go on the
		// lane in use
		l = m.lanes[m.act]
	}
	cum, ok := m.win.TakeAck()
	if ok && len(m.answers) == 0 {
		l.back = append(l.back, reply{ack: cum})
	}
	for _, seq := range m.answers {
		l.back = append(l.back, reply{ack: m.win.Delivered(), atomic: seq, fetched: m.applied[seq]})
	}
	m.answers = m.answers[:0]
}

func (m *model) senderGets(r reply) {
	if err := m.log.Ack(r.ack, nil); err != nil {
		m.t.Fatal(err)
	}
	if r.atomic != 0 {
		if _, ok := m.waiting[r.atomic]; ok {
			delete(m.waiting, r.atomic)
			m.answered[r.atomic] = r.fetched
		}
	}
}

func (m *model) send() {
	if m.sent == m.total {
		return
	}
	msg := mmsg{kind: mData}
	if m.rng.IntN(5) == 0 {
		msg = mmsg{kind: mAtomic, add: 1 + m.rng.Uint64N(100)}
	}
	seq, err := m.log.Append(msg)
	if errors.Is(err, ErrLogFull) {
		return
	} else if err != nil {
		m.t.Fatal(err)
	}
	m.sent++
	if msg.kind == mAtomic {
		m.waiting[seq] = msg.add
	}
	m.lanes[m.act].fwd = append(m.lanes[m.act].fwd, packet{seq, msg})
}

// fail fails the active lane and fails over: the sender asks the
// receiver over the new lane what it delivered and replays the rest; the
// receiver sends again, over the new lane, the answers the sender has
// not had (those lost with the failed lane).
func (m *model) fail() bool {
	l := m.lanes[m.act]
	cause := []error{uct.ErrRouteLost, uct.ErrLocalNICFailed, uct.ErrEndpointTimeout, uct.ErrRemoteNICFailed}[m.rng.IntN(4)]
	if !m.pol.ShouldFailOver(cause) {
		m.t.Fatalf("%v does not fail over", cause)
	}
	to, ok := m.pol.Select(m.laneInfos(), m.act)
	if !ok {
		return false // the other lane is not up yet: no fault now
	}
	// RC delivers a prefix of what was posted before the error.
	k := m.rng.IntN(len(l.fwd) + 1)
	for _, p := range l.fwd[:k] {
		m.receive(p, l)
	}
	if m.rng.IntN(3) == 0 {
		m.late = append(m.late, l.fwd[k:]...) // a flap: the rest arrives late
	}
	l.fwd, l.back = nil, nil
	l.h.Fault(cause, m.now)
	m.act = to
	m.failovers++

	delivered := m.win.Delivered() // the resync answer, over the new lane
	for seq := range m.waiting {
		if old, ok := m.applied[seq]; ok {
			m.lanes[m.act].back = append(m.lanes[m.act].back, reply{ack: delivered, atomic: seq, fetched: old})
			m.answersReplayed++
		}
	}
	n, err := m.log.Replay(delivered, nil, func(seq uint64, msg mmsg) {
		m.lanes[m.act].fwd = append(m.lanes[m.act].fwd, packet{seq, msg})
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.replayed += n
	return true
}

func (m *model) step() {
	m.now = m.now.Add(time.Millisecond)
	switch r := m.rng.IntN(100); {
	case r < 35:
		m.send()
	case r < 75:
		l := m.lanes[m.m()]
		if len(l.fwd) > 0 {
			p := l.fwd[0]
			l.fwd = l.fwd[1:]
			m.receive(p, l)
		}
	case r < 92:
		for _, l := range m.lanes {
			if len(l.back) > 0 {
				rp := l.back[0]
				l.back = l.back[1:]
				m.senderGets(rp)
			}
		}
	case r < 95:
		if len(m.late) > 0 {
			i := m.rng.IntN(len(m.late))
			p := m.late[i]
			m.late = append(m.late[:i], m.late[i+1:]...)
			m.receive(p, nil)
		}
	case r < 97:
		m.fail()
	default:
		// A failed lane comes back: probed, then up after UpProbes answers.
		for _, l := range m.lanes {
			l.h.Probe(m.now)
			l.h.Heard(m.now)
		}
	}
}

// m picks a lane to deliver from: mostly the active one, sometimes the
// other (it may still hold packets posted before a failover it survived).
func (m *model) m() int {
	if m.rng.IntN(4) == 0 {
		return 1 - m.act
	}
	return m.act
}

func (m *model) drain() {
	for i := 0; i < 100000 && (m.sent < m.total || m.log.Len() > 0 || len(m.late) > 0); i++ {
		m.send()
		for _, l := range m.lanes {
			for len(l.fwd) > 0 {
				p := l.fwd[0]
				l.fwd = l.fwd[1:]
				m.receive(p, l)
			}
		}
		for _, l := range m.lanes {
			for len(l.back) > 0 {
				rp := l.back[0]
				l.back = l.back[1:]
				m.senderGets(rp)
			}
		}
		if len(m.late) > 0 {
			m.receive(m.late[0], nil)
			m.late = m.late[1:]
		}
	}
}

func (m *model) check() {
	if m.sent != m.total || m.log.Len() != 0 || len(m.waiting) != 0 {
		m.t.Fatalf("not drained: sent %d/%d, %d unacknowledged, %d atomics waiting", m.sent, m.total, m.log.Len(), len(m.waiting))
	}
	if got := m.next - 1; got != uint64(m.total) {
		m.t.Fatalf("delivered %d of %d", got, m.total)
	}
	for seq, fetched := range m.answered {
		if old, ok := m.applied[seq]; !ok || old != fetched {
			m.t.Fatalf("atomic %d: answered %d, applied %v %d", seq, fetched, ok, old)
		}
	}
	if len(m.answered) != len(m.applied) {
		m.t.Fatalf("%d atomics applied, %d answered", len(m.applied), len(m.answered))
	}
}

// TestModelFailover runs the model over 300 seeds: failovers, replays,
// duplicates and answers lost with a lane and sent again all happen, and
// every atomic is answered with the value it fetched.
func TestModelFailover(t *testing.T) {
	var st modelStats
	for seed := uint64(1); seed <= 300; seed++ {
		m := newModel(t, seed, 400)
		for i := 0; i < 4000 && m.sent < m.total; i++ {
			m.step()
		}
		m.drain()
		m.check()
		st.failovers += m.failovers
		st.replayed += m.replayed
		st.dups += int(m.win.Duplicates())
		st.answersReplayed += m.answersReplayed
	}
	t.Logf("300 seeds of 400 messages: %+v", st)
	if st.failovers == 0 || st.replayed == 0 || st.dups == 0 || st.answersReplayed == 0 {
		t.Fatalf("the schedule never exercised failover, replay, duplicates or a replayed atomic answer: %+v", st)
	}
}

type modelStats struct{ failovers, replayed, dups, answersReplayed int }
