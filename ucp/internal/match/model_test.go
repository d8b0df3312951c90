package match

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is the reference matcher: plain slices, every rule written out the
// obvious way. The model tests run the same operations on a Matcher and on
// a ref and compare every result.
type ref struct {
	cfg     Config
	posted  []*refRecv // post order
	unexp   []*refMsg  // arrival order
	tags    map[Src]uint64
	failed  map[Src]bool
	pending map[Src]bool
	gone    map[Src]bool
}

type refRecv struct {
	id        int
	tag, mask uint64
	told      map[Src]bool
}

type refMsg struct {
	id  int
	src Src
	tag uint64
}

func newRef(cfg Config) *ref {
	return &ref{cfg: cfg, tags: map[Src]uint64{}, failed: map[Src]bool{}, pending: map[Src]bool{}, gone: map[Src]bool{}}
}

func refMatch(rtag, rmask, tag uint64) bool { return (tag^rtag)&rmask == 0 }

func (f *ref) suspended() bool { return len(f.pending) > 0 }

// could: a message from s (whose tag carries the source tag of s in the
// SourceMask bits) could match r.
func (f *ref) could(r *refRecv, s Src) bool {
	st, known := f.tags[s]
	if f.cfg.SourceMask == 0 || !known {
		return true
	}
	for bit := uint64(1); bit != 0; bit <<= 1 {
		if f.cfg.SourceMask&bit != 0 && r.mask&bit != 0 && (r.tag&bit) != (st&bit) {
			return false
		}
	}
	return true
}

// only: r matches no message that does not come from s.
func (f *ref) only(r *refRecv, s Src) bool {
	st, known := f.tags[s]
	if f.cfg.SourceMask == 0 || !known {
		return false
	}
	if r.mask&f.cfg.SourceMask != f.cfg.SourceMask {
		return false
	}
	return r.tag&f.cfg.SourceMask == st
}

// dead: r names a rank whose every source (there is one) is failed or
// gone, and no unexpected message matches r; the first such source.
func (f *ref) dead(r *refRecv) (Src, bool) {
	sm := f.cfg.SourceMask
	if sm == 0 || r.mask&sm != sm {
		return 0, false
	}
	var down []Src
	for s, t := range f.tags {
		if t != r.tag&sm {
			continue
		}
		if !f.failed[s] && !f.gone[s] {
			return 0, false // a live source has this rank
		}
		down = append(down, s)
	}
	if len(down) == 0 {
		return 0, false
	}
	for _, m := range f.unexp {
		if refMatch(r.tag, r.mask, m.tag) {
			return 0, false
		}
	}
	slices.Sort(down)
	return down[0], true
}

// setTag: s (re)joins with its source tag; other gone sources of that
// rank are forgotten.
func (f *ref) setTag(s Src, tag uint64) {
	f.tags[s] = tag & f.cfg.SourceMask
	delete(f.gone, s)
	if f.cfg.SourceMask == 0 {
		return
	}
	for d := range f.gone {
		if t, known := f.tags[d]; known && t == f.tags[s] {
			delete(f.gone, d)
			delete(f.tags, d)
		}
	}
}

func (f *ref) failedSorted() []Src {
	var out []Src
	for s := range f.failed {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func (f *ref) isPosted(id int) bool {
	return slices.ContainsFunc(f.posted, func(r *refRecv) bool { return r.id == id })
}

func (f *ref) isQueued(id int) bool {
	return slices.ContainsFunc(f.unexp, func(m *refMsg) bool { return m.id == id })
}

func (f *ref) removeRecv(id int) {
	f.posted = slices.DeleteFunc(f.posted, func(r *refRecv) bool { return r.id == id })
}

func (f *ref) removeMsg(id int) {
	f.unexp = slices.DeleteFunc(f.unexp, func(m *refMsg) bool { return m.id == id })
}

func (f *ref) post(id int, tag, mask uint64) int {
	if !f.suspended() {
		for _, m := range f.unexp {
			if refMatch(tag, mask, m.tag) {
				f.removeMsg(m.id)
				return m.id
			}
		}
	}
	f.posted = append(f.posted, &refRecv{id: id, tag: tag, mask: mask, told: map[Src]bool{}})
	return -1
}

func (f *ref) arrive(id int, src Src, tag uint64) int {
	if !f.suspended() {
		for _, r := range f.posted {
			if refMatch(r.tag, r.mask, tag) {
				f.removeRecv(r.id)
				return r.id
			}
		}
	}
	f.unexp = append(f.unexp, &refMsg{id: id, src: src, tag: tag})
	return -1
}

func (f *ref) probe(tag, mask uint64, remove bool) int {
	if f.suspended() {
		return -1
	}
	for _, m := range f.unexp {
		if refMatch(tag, mask, m.tag) {
			if remove {
				f.removeMsg(m.id)
			}
			return m.id
		}
	}
	return -1
}

func (f *ref) cancel(id int) bool {
	ok := f.isPosted(id)
	f.removeRecv(id)
	return ok
}

func (f *ref) removeMsgOp(id int) bool {
	ok := f.isQueued(id)
	f.removeMsg(id)
	return ok
}

func (f *ref) fail(s Src) []int {
	f.failed[s] = true
	delete(f.gone, s)
	var out []int
	if f.cfg.Mode == NeverSuspend {
		for _, r := range slices.Clone(f.posted) {
			if _, dead := f.dead(r); dead && f.only(r, s) {
				f.removeRecv(r.id)
				out = append(out, r.id)
			}
		}
		return out
	}
	f.pending[s] = true
	for _, r := range f.posted {
		if f.could(r, s) && !r.told[s] {
			r.told[s] = true
			out = append(out, r.id)
		}
	}
	return out
}

func (f *ref) check(id int) (Notice, Src) {
	var r *refRecv
	for _, x := range f.posted {
		if x.id == id {
			r = x
		}
	}
	if r == nil {
		return NoticeNone, 0
	}
	if s, dead := f.dead(r); dead {
		f.removeRecv(id)
		return NoticePeerFailed, s
	}
	if !f.suspended() {
		return NoticeNone, 0
	}
	n, first := NoticeNone, Src(0)
	for _, s := range f.failedSorted() {
		if f.pending[s] && f.could(r, s) && !r.told[s] {
			r.told[s] = true
			if n == NoticeNone {
				n, first = NoticeFailedPending, s
			}
		}
	}
	return n, first
}

func (f *ref) rematch() [][2]int {
	var out [][2]int
	for _, r := range slices.Clone(f.posted) {
		for _, m := range f.unexp {
			if refMatch(r.tag, r.mask, m.tag) {
				f.removeMsg(m.id)
				f.removeRecv(r.id)
				out = append(out, [2]int{r.id, m.id})
				break
			}
		}
	}
	return out
}

func (f *ref) resume() [][2]int {
	if !f.suspended() {
		return nil
	}
	clear(f.pending)
	return f.rematch()
}

func (f *ref) purge(s Src) (only []int, msgs []int, pairs [][2]int) {
	was := f.suspended()
	for _, m := range slices.Clone(f.unexp) {
		if m.src == s {
			f.removeMsg(m.id)
			msgs = append(msgs, m.id)
		}
	}
	delete(f.failed, s)
	delete(f.pending, s)
	f.gone[s] = true
	if t, known := f.tags[s]; f.cfg.SourceMask == 0 || !known {
		// no rank: forgotten
		delete(f.gone, s)
		delete(f.tags, s)
	} else {
		// one gone source per rank, the last purged
		for d := range f.gone {
			if dt, ok := f.tags[d]; d != s && ok && dt == t {
				delete(f.gone, d)
				delete(f.tags, d)
			}
		}
	}
	for _, r := range slices.Clone(f.posted) {
		delete(r.told, s)
		if _, dead := f.dead(r); dead && f.only(r, s) {
			f.removeRecv(r.id)
			only = append(only, r.id)
		}
	}
	if was && !f.suspended() {
		pairs = f.rematch()
	}
	return
}

// opSource yields the choices of a model run.
type opSource interface {
	intn(n int) int // in [0,n)
	more() bool
}

type randSource struct {
	r    *rand.Rand
	left int
}

func (s *randSource) intn(n int) int { return s.r.IntN(n) }
func (s *randSource) more() bool     { s.left--; return s.left >= 0 }

type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}
func (s *byteSource) more() bool { return len(s.b) > 0 }

// Tag layout of the model: bit 8 context, bits 4-5 source rank, bits 0-1
// user tag. There are more sources than ranks: sources s and s+numRank
// share a rank, as an endpoint to a peer that failed and a new endpoint to
// the peer that replaced it.
const (
	modelSrcMask = 0x30
	numRank      = 4
	numSrc       = 6
	numRecv      = 16
	numMsg       = 24
)

var modelMasks = []uint64{
	^uint64(0),              // exact
	^uint64(0),              // exact (twice as likely)
	^uint64(0) &^ 0x30,      // any source
	^uint64(0) &^ 0x03,      // any tag
	^uint64(0) &^ 0x33,      // any source, any tag
	^uint64(0) &^ 0x10,      // half of the source bits
	0x130,                   // context and source only
	0,                       // anything
	^uint64(0) &^ (1 << 40), // exact-like but not all ones
}

func srcBits(s Src) uint64 { return uint64(s%numRank) << 4 }

type model struct {
	t    testing.TB
	m    *Matcher
	f    *ref
	recv []*Recv
	msg  []*Msg
	log  []string
}

func newModel(t testing.TB, cfg Config) *model {
	md := &model{t: t, m: New(cfg), f: newRef(cfg)}
	for i := range numRecv {
		md.recv = append(md.recv, &Recv{Data: i})
	}
	for i := range numMsg {
		md.msg = append(md.msg, &Msg{Data: i})
	}
	return md
}

func recvID(r *Recv) int {
	if r == nil {
		return -1
	}
	return r.Data.(int)
}

func msgID(m *Msg) int {
	if m == nil {
		return -1
	}
	return m.Data.(int)
}

func recvIDs(rs []*Recv) []int {
	var out []int
	for _, r := range rs {
		out = append(out, recvID(r))
	}
	return out
}

func msgIDs(ms []*Msg) []int {
	var out []int
	for _, m := range ms {
		out = append(out, msgID(m))
	}
	return out
}

func pairIDs(ps []Pair) [][2]int {
	var out [][2]int
	for _, p := range ps {
		out = append(out, [2]int{recvID(p.Recv), msgID(p.Msg)})
	}
	return out
}

func (md *model) fatalf(format string, args ...any) {
	md.t.Helper()
	start := max(0, len(md.log)-40)
	md.t.Fatalf("%s\nlast ops:\n  %s", fmt.Sprintf(format, args...), joinLines(md.log[start:]))
}

func joinLines(l []string) string {
	s := ""
	for i, x := range l {
		if i > 0 {
			s += "\n  "
		}
		s += x
	}
	return s
}

func eq[T comparable](a, b []T) bool { return slices.Equal(a, b) }

func (md *model) randTag(src opSource) uint64 {
	return uint64(src.intn(2))<<8 | uint64(src.intn(numRank))<<4 | uint64(src.intn(4))
}

// step runs one random operation on both matchers and compares results.
func (md *model) step(src opSource) {
	md.t.Helper()
	m, f := md.m, md.f
	switch op := src.intn(21); {
	case op < 6: // post
		id := src.intn(numRecv)
		r := md.recv[id]
		if f.isPosted(id) != r.Posted() {
			md.fatalf("recv %d posted: matcher %v ref %v", id, r.Posted(), f.isPosted(id))
		}
		if r.Posted() {
			return
		}
		r.Tag = md.randTag(src)
		r.Mask = modelMasks[src.intn(len(modelMasks))]
		md.log = append(md.log, fmt.Sprintf("post r%d tag=%#x mask=%#x", id, r.Tag, r.Mask))
		got, want := msgID(m.PostRecv(r)), f.post(id, r.Tag, r.Mask)
		if got != want {
			md.fatalf("PostRecv r%d = m%d, want m%d", id, got, want)
		}
		if got < 0 && src.intn(2) == 0 {
			gn, gs := m.CheckPosted(r)
			wn, ws := f.check(id)
			md.log = append(md.log, fmt.Sprintf("check r%d -> %v %d", id, wn, ws))
			if gn != wn || gs != ws {
				md.fatalf("CheckPosted r%d = %v,%d want %v,%d", id, gn, gs, wn, ws)
			}
		}
	case op < 12: // arrive
		id := src.intn(numMsg)
		msg := md.msg[id]
		if f.isQueued(id) != msg.Queued() {
			md.fatalf("msg %d queued: matcher %v ref %v", id, msg.Queued(), f.isQueued(id))
		}
		if msg.Queued() {
			return
		}
		msg.Src = Src(src.intn(numSrc))
		msg.Tag = uint64(src.intn(2))<<8 | srcBits(msg.Src) | uint64(src.intn(4))
		md.log = append(md.log, fmt.Sprintf("arrive m%d src=%d tag=%#x", id, msg.Src, msg.Tag))
		var r *Recv
		if src.intn(2) == 0 {
			r = m.Arrive(msg)
		} else if r = m.TakeRecv(msg.Tag); r == nil {
			m.Queue(msg) // the eager receiver's way: TakeRecv, then Queue
		}
		got, want := recvID(r), f.arrive(id, msg.Src, msg.Tag)
		if got != want {
			md.fatalf("Arrive m%d = r%d, want r%d", id, got, want)
		}
	case op == 12: // probe
		tag := md.randTag(src)
		mask := modelMasks[src.intn(len(modelMasks))]
		remove := src.intn(2) == 0
		md.log = append(md.log, fmt.Sprintf("probe tag=%#x mask=%#x remove=%v", tag, mask, remove))
		got, want := msgID(m.Probe(tag, mask, remove)), f.probe(tag, mask, remove)
		if got != want {
			md.fatalf("Probe = m%d, want m%d", got, want)
		}
	case op == 13: // cancel
		id := src.intn(numRecv)
		md.log = append(md.log, fmt.Sprintf("cancel r%d", id))
		if got, want := m.CancelRecv(md.recv[id]), f.cancel(id); got != want {
			md.fatalf("CancelRecv r%d = %v, want %v", id, got, want)
		}
	case op == 14: // remove message
		id := src.intn(numMsg)
		md.log = append(md.log, fmt.Sprintf("removemsg m%d", id))
		if got, want := m.RemoveMsg(md.msg[id]), f.removeMsgOp(id); got != want {
			md.fatalf("RemoveMsg m%d = %v, want %v", id, got, want)
		}
	case op == 15: // fail
		s := Src(src.intn(numSrc))
		md.log = append(md.log, fmt.Sprintf("fail %d", s))
		got, want := recvIDs(m.Fail(s)), f.fail(s)
		if !eq(got, want) {
			md.fatalf("Fail %d = %v, want %v", s, got, want)
		}
	case op == 16: // resume
		md.log = append(md.log, "resume")
		got, want := pairIDs(m.Resume()), f.resume()
		if !eq(got, want) {
			md.fatalf("Resume = %v, want %v", got, want)
		}
	case op == 17: // purge
		s := Src(src.intn(numSrc))
		md.log = append(md.log, fmt.Sprintf("purge %d", s))
		go1, gm, gp := m.Purge(s)
		wo, wm, wp := f.purge(s)
		if !eq(recvIDs(go1), wo) || !eq(msgIDs(gm), wm) || !eq(pairIDs(gp), wp) {
			md.fatalf("Purge %d = %v %v %v, want %v %v %v", s, recvIDs(go1), msgIDs(gm), pairIDs(gp), wo, wm, wp)
		}
	case op == 18: // learn a source tag
		s := Src(src.intn(numSrc))
		md.log = append(md.log, fmt.Sprintf("sourcetag %d", s))
		m.SetSourceTag(s, srcBits(s)|0x1cf) // non-source bits are ignored
		f.setTag(s, srcBits(s))
	case op == 20: // drain, rarely
		if src.intn(8) != 0 {
			return
		}
		md.log = append(md.log, "drain")
		gr, gm := m.Drain()
		var wr, wm []int
		for _, r := range f.posted {
			wr = append(wr, r.id)
		}
		for _, x := range f.unexp {
			wm = append(wm, x.id)
		}
		f.posted, f.unexp = nil, nil
		if !eq(recvIDs(gr), wr) || !eq(msgIDs(gm), wm) {
			md.fatalf("Drain = %v %v, want %v %v", recvIDs(gr), msgIDs(gm), wr, wm)
		}
	case op == 19: // check a posted receive
		id := src.intn(numRecv)
		gn, gs := m.CheckPosted(md.recv[id])
		wn, ws := f.check(id)
		md.log = append(md.log, fmt.Sprintf("check r%d -> %v %d", id, wn, ws))
		if gn != wn || gs != ws {
			md.fatalf("CheckPosted r%d = %v,%d want %v,%d", id, gn, gs, wn, ws)
		}
	}
	gp, gu := m.Len()
	if gp != len(f.posted) || gu != len(f.unexp) {
		md.fatalf("Len = %d,%d want %d,%d", gp, gu, len(f.posted), len(f.unexp))
	}
	if m.Suspended() != f.suspended() {
		md.fatalf("Suspended = %v want %v", m.Suspended(), f.suspended())
	}
	for s := range Src(numSrc) {
		if m.Failed(s) != f.failed[s] || m.Gone(s) != f.gone[s] {
			md.fatalf("source %d: failed %v gone %v, want %v %v", s, m.Failed(s), m.Gone(s), f.failed[s], f.gone[s])
		}
		tag, known := m.SourceTag(s)
		if wtag, wknown := f.tags[s]; known != wknown || tag != wtag {
			md.fatalf("source %d: tag %#x known %v, want %#x known %v", s, tag, known, wtag, wknown)
		}
	}
	md.checkQueues()
}

// checkQueues compares the full queue contents in order.
func (md *model) checkQueues() {
	md.t.Helper()
	var gp, wp []int
	for _, r := range md.m.postedOrder() {
		gp = append(gp, recvID(r))
	}
	for _, r := range md.f.posted {
		wp = append(wp, r.id)
	}
	var gu, wu []int
	for x := md.m.unexp.head; x != nil; x = x.gnext {
		gu = append(gu, msgID(x))
	}
	for _, x := range md.f.unexp {
		wu = append(wu, x.id)
	}
	if !eq(gp, wp) || !eq(gu, wu) {
		md.fatalf("queues posted %v unexpected %v, want %v %v", gp, gu, wp, wu)
	}
}

func modelConfigs() []Config {
	return []Config{
		{Mode: Suspend, SourceMask: modelSrcMask},
		{Mode: NeverSuspend, SourceMask: modelSrcMask},
		{Mode: Suspend, SourceMask: 0},
		{Mode: NeverSuspend, SourceMask: 0},
	}
}

func TestModel(t *testing.T) {
	seeds := 100
	steps := 2000
	if testing.Short() {
		seeds = 20
	}
	for _, cfg := range modelConfigs() {
		t.Run(fmt.Sprintf("%v/srcmask=%#x", cfg.Mode, cfg.SourceMask), func(t *testing.T) {
			for seed := range seeds {
				md := newModel(t, cfg)
				src := &randSource{r: rand.New(rand.NewPCG(uint64(seed), 0x6d61746368)), left: steps}
				for src.more() {
					md.step(src)
				}
				md.checkQueues()
			}
		})
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 16})
	f.Add([]byte{15, 1, 0, 2, 3, 4, 0, 6, 1, 0, 1, 0, 16, 17, 1})
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 400)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		cfg := modelConfigs()[int(b[0])%4]
		md := newModel(t, cfg)
		src := &byteSource{b: b[1:]}
		for src.more() {
			md.step(src)
		}
		md.checkQueues()
	})
}
