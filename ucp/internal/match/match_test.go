package match

import (
	"slices"
	"testing"
)

// Tag layout used by the table tests: bits 32-47 source rank, bits 0-31
// user tag, like an MPI tag word.
const (
	tSrcMask = 0xffff << 32
	anySrc   = ^uint64(0) &^ tSrcMask
	anyTag   = ^uint64(0) &^ 0xffffffff
	exact    = ^uint64(0)
)

func tg(src Src, tag uint32) uint64 { return uint64(src)<<32 | uint64(tag) }

func newTest(mode Mode, known ...Src) *Matcher {
	m := New(Config{Mode: mode, SourceMask: tSrcMask})
	for _, s := range known {
		m.SetSourceTag(s, tg(s, 0))
	}
	return m
}

func rv(name string, tag, mask uint64) *Recv { return &Recv{Tag: tag, Mask: mask, Data: name} }
func ms(name string, s Src, tag uint32) *Msg { return &Msg{Src: s, Tag: tg(s, tag), Data: name} }

func names[T interface{ *Recv | *Msg }](xs []T) []string {
	var out []string
	for _, x := range xs {
		switch v := any(x).(type) {
		case *Recv:
			out = append(out, v.Data.(string))
		case *Msg:
			out = append(out, v.Data.(string))
		}
	}
	return out
}

func pairNames(ps []Pair) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Recv.Data.(string)+"="+p.Msg.Data.(string))
	}
	return out
}

func TestMatchRule(t *testing.T) {
	for _, c := range []struct {
		name            string
		rtag, mask, tag uint64
		want            bool
	}{
		{"exact equal", tg(1, 5), exact, tg(1, 5), true},
		{"exact other tag", tg(1, 5), exact, tg(1, 6), false},
		{"exact other source", tg(1, 5), exact, tg(2, 5), false},
		{"any source", tg(1, 5), anySrc, tg(2, 5), true},
		{"any source other tag", tg(1, 5), anySrc, tg(2, 6), false},
		{"any tag", tg(1, 5), anyTag, tg(1, 99), true},
		{"any tag other source", tg(1, 5), anyTag, tg(3, 99), false},
		{"mask zero", 0x1234, 0, 0xffff, true},
		{"bits outside mask ignored", 0xf0, 0x0f, 0x00, true},
		{"bits inside mask compared", 0xf1, 0x0f, 0x00, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Both paths: a posted receive met by Arrive, and an
			// unexpected message met by PostRecv; and Probe.
			m := New(Config{})
			r := &Recv{Tag: c.rtag, Mask: c.mask}
			msg := &Msg{Tag: c.tag}
			if got := m.PostRecv(r) == nil && m.Arrive(msg) == r; got != c.want {
				t.Errorf("posted then arrived: matched=%v want %v", got, c.want)
			}
			m = New(Config{})
			r2, msg2 := &Recv{Tag: c.rtag, Mask: c.mask}, &Msg{Tag: c.tag}
			if got := m.Arrive(msg2) == nil && m.PostRecv(r2) == msg2; got != c.want {
				t.Errorf("arrived then posted: matched=%v want %v", got, c.want)
			}
			m = New(Config{})
			m.Arrive(&Msg{Tag: c.tag})
			if got := m.Probe(c.rtag, c.mask, false) != nil; got != c.want {
				t.Errorf("probe: found=%v want %v", got, c.want)
			}
		})
	}
}

func TestPostOrder(t *testing.T) {
	for _, c := range []struct {
		name  string
		recvs []*Recv
		want  []string // receives taken by messages tagged tg(1,5), in order
	}{
		{"exact then exact", []*Recv{rv("a", tg(1, 5), exact), rv("b", tg(1, 5), exact)}, []string{"a", "b"}},
		{"wild then exact", []*Recv{rv("a", tg(1, 5), anySrc), rv("b", tg(1, 5), exact)}, []string{"a", "b"}},
		{"exact then wild", []*Recv{rv("a", tg(1, 5), exact), rv("b", tg(1, 5), anySrc)}, []string{"a", "b"}},
		{"wild exact wild", []*Recv{rv("a", 0, 0), rv("b", tg(1, 5), exact), rv("c", tg(1, 0), anyTag)}, []string{"a", "b", "c"}},
		{"non-matching skipped", []*Recv{rv("x", tg(1, 6), exact), rv("y", tg(2, 5), anyTag), rv("a", tg(1, 5), anyTag)}, []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTest(Suspend)
			for _, r := range c.recvs {
				if m.PostRecv(r) != nil {
					t.Fatal("PostRecv matched on an empty matcher")
				}
			}
			var got []string
			for range c.recvs {
				if r := m.Arrive(ms("m", 1, 5)); r != nil {
					got = append(got, r.Data.(string))
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("taken %v, want %v", got, c.want)
			}
		})
	}
}

func TestArrivalOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		recv *Recv
		want string
	}{
		{"exact takes first of its tag", rv("r", tg(1, 5), exact), "b"},
		{"any tag takes first from source", rv("r", tg(1, 0), anyTag), "a"},
		{"any source takes first of tag", rv("r", tg(0, 5), anySrc), "b"},
		{"any any takes first", rv("r", 0, 0), "z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTest(Suspend)
			for _, msg := range []*Msg{ms("z", 2, 9), ms("a", 1, 4), ms("b", 1, 5), ms("c", 1, 5), ms("d", 2, 5)} {
				if m.Arrive(msg) != nil {
					t.Fatal("Arrive matched with nothing posted")
				}
			}
			got := m.PostRecv(c.recv)
			if got == nil || got.Data != c.want {
				t.Fatalf("PostRecv took %v, want %s", got, c.want)
			}
			if _, u := m.Len(); u != 4 {
				t.Errorf("%d unexpected left, want 4", u)
			}
		})
	}
}

// Messages from one source with the same tag are never overtaken, whatever
// mix of exact and wildcard receives consumes them.
func TestNoOvertaking(t *testing.T) {
	m := newTest(Suspend)
	var msgs []*Msg
	for i := range 6 {
		msgs = append(msgs, &Msg{Src: 1, Tag: tg(1, 7), Data: i})
		m.Arrive(msgs[i])
	}
	masks := []uint64{exact, anySrc, anyTag, 0, exact, anySrc}
	for i, mask := range masks {
		got := m.PostRecv(&Recv{Tag: tg(1, 7), Mask: mask})
		if got != msgs[i] {
			t.Fatalf("receive %d (mask %#x) got %v, want message %d", i, mask, got.Data, i)
		}
	}
}

func TestProbe(t *testing.T) {
	m := newTest(Suspend, 1)
	a, b := ms("a", 1, 5), ms("b", 1, 5)
	m.Arrive(a)
	m.Arrive(b)
	if got := m.Probe(tg(1, 5), exact, false); got != a {
		t.Fatalf("Probe = %v, want a", got)
	}
	if got := m.Probe(tg(1, 5), exact, true); got != a || a.Queued() {
		t.Fatalf("Probe remove = %v (queued %v), want a removed", got, a.Queued())
	}
	if got := m.Probe(0, 0, false); got != b {
		t.Fatalf("Probe after remove = %v, want b", got)
	}
	if got := m.Probe(tg(1, 6), exact, false); got != nil {
		t.Fatalf("Probe other tag = %v, want nil", got)
	}
	m.Fail(1)
	if got := m.Probe(0, 0, false); got != nil {
		t.Fatalf("Probe while suspended = %v, want nil", got)
	}
	m.Resume()
	if got := m.Probe(0, 0, true); got != b {
		t.Fatalf("Probe after Resume = %v, want b", got)
	}
}

func TestCancelAndRemove(t *testing.T) {
	m := newTest(Suspend)
	a, b := rv("a", tg(1, 5), exact), rv("b", tg(1, 5), anySrc)
	m.PostRecv(a)
	m.PostRecv(b)
	if !m.CancelRecv(a) || m.CancelRecv(a) || a.Posted() {
		t.Fatal("CancelRecv: want true once, then false")
	}
	if got := m.Arrive(ms("x", 1, 5)); got != b {
		t.Fatalf("Arrive after cancel took %v, want b", got)
	}
	x := ms("x", 1, 5)
	m.Arrive(x)
	if !m.RemoveMsg(x) || m.RemoveMsg(x) || x.Queued() {
		t.Fatal("RemoveMsg: want true once, then false")
	}
	if p, u := m.Len(); p != 0 || u != 0 {
		t.Fatalf("Len = %d,%d want 0,0", p, u)
	}
}

func TestDoublePostPanics(t *testing.T) {
	m := newTest(Suspend)
	r := rv("a", 1, exact)
	m.PostRecv(r)
	defer func() {
		if recover() == nil {
			t.Fatal("second PostRecv of a posted receive did not panic")
		}
	}()
	m.PostRecv(r)
}

func TestCouldOnlyMatch(t *testing.T) {
	for _, c := range []struct {
		name        string
		cfg         Config
		setTag      bool
		r           *Recv
		could, only bool
	}{
		{"specific", Config{SourceMask: tSrcMask}, true, rv("", tg(1, 5), exact), true, true},
		{"specific any tag", Config{SourceMask: tSrcMask}, true, rv("", tg(1, 0), anyTag), true, true},
		{"other source", Config{SourceMask: tSrcMask}, true, rv("", tg(2, 5), exact), false, false},
		{"wildcard source", Config{SourceMask: tSrcMask}, true, rv("", tg(2, 5), anySrc), true, false},
		{"mask zero", Config{SourceMask: tSrcMask}, true, rv("", 0, 0), true, false},
		{"partial source bits agree", Config{SourceMask: tSrcMask}, true, rv("", tg(3, 5), ^uint64(0)&^(2<<32)), true, false},
		{"partial source bits differ", Config{SourceMask: tSrcMask}, true, rv("", tg(2, 5), ^uint64(0)&^(2<<32)), false, false},
		{"source tag unknown", Config{SourceMask: tSrcMask}, false, rv("", tg(1, 5), exact), true, false},
		{"source tag unknown, other source", Config{SourceMask: tSrcMask}, false, rv("", tg(2, 5), exact), true, false},
		{"no source mask", Config{}, true, rv("", tg(1, 5), exact), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := New(c.cfg)
			if c.setTag {
				m.SetSourceTag(1, tg(1, 0xabc))
			}
			if got := m.CouldMatch(c.r, 1); got != c.could {
				t.Errorf("CouldMatch = %v, want %v", got, c.could)
			}
			if got := m.CanOnlyMatch(c.r, 1); got != c.only {
				t.Errorf("CanOnlyMatch = %v, want %v", got, c.only)
			}
		})
	}
}

func TestFailSuspend(t *testing.T) {
	m := newTest(Suspend, 1, 2, 3)
	spec1 := rv("spec1", tg(1, 5), exact)
	spec2 := rv("spec2", tg(2, 5), exact)
	wild := rv("wild", tg(0, 5), anySrc)
	anyR := rv("any", 0, 0)
	spec4 := rv("spec4", tg(4, 5), exact)
	for _, r := range []*Recv{spec1, spec2, wild, anyR, spec4} {
		m.PostRecv(r)
	}
	if got := names(m.Fail(1)); !slices.Equal(got, []string{"spec1", "wild", "any"}) {
		t.Fatalf("Fail(1) = %v", got)
	}
	if !m.Suspended() {
		t.Fatal("not suspended after Fail in Suspend mode")
	}
	// Matching stopped: an arriving message that spec2 would match is queued.
	x := ms("x", 2, 5)
	if r := m.Arrive(x); r != nil {
		t.Fatalf("Arrive while suspended matched %v", r.Data)
	}
	// A receive posted now only queues though x would match it.
	late := rv("late", tg(2, 5), anyTag)
	if got := m.PostRecv(late); got != nil {
		t.Fatalf("PostRecv while suspended took %v", got.Data)
	}
	// Told once per source: Fail(1) again tells nobody new except late,
	// which cannot match 1, so nobody.
	if got := m.Fail(1); len(got) != 0 {
		t.Fatalf("repeated Fail(1) = %v, want none", names(got))
	}
	// A later failure of 3 tells the wildcards again, not spec1 or late.
	if got := names(m.Fail(3)); !slices.Equal(got, []string{"wild", "any"}) {
		t.Fatalf("Fail(3) = %v", got)
	}
	// The source tag of 4 is unknown: every receive could match it.
	if got := names(m.Fail(4)); !slices.Equal(got, []string{"spec1", "spec2", "wild", "any", "spec4", "late"}) {
		t.Fatalf("Fail(4) = %v", got)
	}
	if p, u := m.Len(); p != 6 || u != 1 {
		t.Fatalf("Len = %d,%d want 6,1 (Fail completes nothing)", p, u)
	}
}

func TestFailNeverSuspend(t *testing.T) {
	m := newTest(NeverSuspend, 1, 2)
	spec1 := rv("spec1", tg(1, 5), exact)
	spec1b := rv("spec1b", tg(1, 0), anyTag)
	wild := rv("wild", tg(0, 5), anySrc)
	spec2 := rv("spec2", tg(2, 5), exact)
	for _, r := range []*Recv{spec1, wild, spec1b, spec2} {
		m.PostRecv(r)
	}
	if got := names(m.Fail(1)); !slices.Equal(got, []string{"spec1", "spec1b"}) {
		t.Fatalf("Fail(1) = %v", got)
	}
	if spec1.Posted() || spec1b.Posted() || m.Suspended() {
		t.Fatal("only-1 receives still posted or matcher suspended")
	}
	if r := m.Arrive(ms("x", 2, 5)); r != wild {
		t.Fatalf("Arrive after Fail took %v, want wild (matching continues)", r)
	}
	if got := m.Resume(); got != nil {
		t.Fatalf("Resume in NeverSuspend mode = %v", pairNames(got))
	}
}

func TestCheckPosted(t *testing.T) {
	t.Run("suspended tells once", func(t *testing.T) {
		m := newTest(Suspend, 1, 2)
		m.Fail(1)
		m.Fail(2)
		w := rv("w", 0, 0)
		m.PostRecv(w)
		if n, s := m.CheckPosted(w); n != NoticeFailedPending || s != 1 {
			t.Fatalf("CheckPosted = %v,%d want FailedPending,1", n, s)
		}
		if n, _ := m.CheckPosted(w); n != NoticeNone {
			t.Fatalf("second CheckPosted = %v, want None (told of 1 and 2)", n)
		}
		if got := m.Fail(2); len(got) != 0 {
			t.Fatalf("Fail(2) after CheckPosted told it = %v", names(got))
		}
		other := rv("other", tg(3, 1), exact)
		m.PostRecv(other)
		if n, _ := m.CheckPosted(other); n != NoticeNone {
			t.Fatalf("receive from a healthy source: %v", n)
		}
		if !w.Posted() {
			t.Fatal("FailedPending removed the receive")
		}
	})
	t.Run("active peer failed", func(t *testing.T) {
		m := newTest(Suspend, 1, 2)
		m.Fail(1)
		m.Resume()
		r := rv("r", tg(1, 5), exact)
		w := rv("w", tg(0, 5), anySrc)
		m.PostRecv(r)
		m.PostRecv(w)
		if n, s := m.CheckPosted(r); n != NoticePeerFailed || s != 1 || r.Posted() {
			t.Fatalf("CheckPosted = %v,%d posted=%v want PeerFailed,1 removed", n, s, r.Posted())
		}
		if n, _ := m.CheckPosted(w); n != NoticeNone {
			t.Fatalf("wildcard after Resume: %v, want None", n)
		}
	})
	t.Run("data from the failed source first", func(t *testing.T) {
		m := newTest(NeverSuspend, 1)
		x := ms("x", 1, 5)
		m.Arrive(x)
		m.Fail(1)
		if got := m.PostRecv(rv("r", tg(1, 5), exact)); got != x {
			t.Fatalf("PostRecv = %v, want x (arrived before the failure)", got)
		}
	})
	t.Run("no failure", func(t *testing.T) {
		m := newTest(Suspend, 1)
		r := rv("r", tg(1, 5), exact)
		m.PostRecv(r)
		if n, _ := m.CheckPosted(r); n != NoticeNone {
			t.Fatalf("CheckPosted = %v", n)
		}
	})
}

func TestRepostClearsTold(t *testing.T) {
	m := newTest(Suspend, 1)
	w := rv("w", 0, 0)
	m.PostRecv(w)
	if len(m.Fail(1)) != 1 {
		t.Fatal("wildcard not told")
	}
	m.CancelRecv(w)
	m.PostRecv(w) // reused request
	if got := names(m.Fail(1)); !slices.Equal(got, []string{"w"}) {
		t.Fatalf("reposted receive: Fail(1) = %v, want [w]", got)
	}
}

func TestResume(t *testing.T) {
	m := newTest(Suspend, 1, 2)
	x1 := ms("x1", 1, 5) // arrived before the failure
	m.Arrive(x1)
	m.Fail(1)
	y2 := ms("y2", 2, 5)
	z2 := ms("z2", 2, 6)
	m.Arrive(y2)
	m.Arrive(z2)
	a := rv("a", tg(0, 5), anySrc) // earliest posted: takes x1 (earliest arrival)
	b := rv("b", tg(2, 0), anyTag) // takes y2
	c := rv("c", tg(1, 5), exact)  // nothing left from 1
	d := rv("d", tg(2, 6), exact)  // z2
	for _, r := range []*Recv{a, b, c, d} {
		m.PostRecv(r)
	}
	got := pairNames(m.Resume())
	if want := []string{"a=x1", "b=y2", "d=z2"}; !slices.Equal(got, want) {
		t.Fatalf("Resume = %v, want %v", got, want)
	}
	if m.Suspended() || !c.Posted() || !m.Failed(1) {
		t.Fatal("after Resume: want active, c posted, 1 still failed")
	}
	if got := m.Resume(); got != nil {
		t.Fatalf("second Resume = %v", pairNames(got))
	}
}

func TestPurge(t *testing.T) {
	t.Run("resumes when no failure pending", func(t *testing.T) {
		m := newTest(Suspend, 1, 2, 3)
		x1 := ms("x1", 1, 5)
		y3 := ms("y3", 3, 5)
		m.Arrive(x1)
		m.Arrive(y3)
		m.Fail(1)
		m.Fail(2)
		only1 := rv("only1", tg(1, 0), anyTag)
		w := rv("w", tg(0, 5), anySrc)
		m.PostRecv(only1)
		m.PostRecv(w)
		onlyS, msgs, pairs := m.Purge(1)
		if !slices.Equal(names(onlyS), []string{"only1"}) || !slices.Equal(names(msgs), []string{"x1"}) || pairs != nil {
			t.Fatalf("Purge(1) = %v %v %v", names(onlyS), names(msgs), pairNames(pairs))
		}
		if !m.Suspended() {
			t.Fatal("resumed although 2 is still pending")
		}
		onlyS, msgs, pairs = m.Purge(2)
		if len(onlyS) != 0 || len(msgs) != 0 || !slices.Equal(pairNames(pairs), []string{"w=y3"}) {
			t.Fatalf("Purge(2) = %v %v %v", names(onlyS), names(msgs), pairNames(pairs))
		}
		if m.Suspended() || m.Failed(1) || m.Failed(2) {
			t.Fatal("after purging every failed source: want active, none failed")
		}
	})
	t.Run("after Resume no pairs", func(t *testing.T) {
		m := newTest(Suspend, 1)
		m.Fail(1)
		r := rv("r", tg(1, 5), exact)
		m.PostRecv(r)
		m.Resume()
		onlyS, msgs, pairs := m.Purge(1)
		if !slices.Equal(names(onlyS), []string{"r"}) || msgs != nil || pairs != nil {
			t.Fatalf("Purge(1) = %v %v %v", names(onlyS), names(msgs), pairNames(pairs))
		}
	})
	t.Run("forgets told marks", func(t *testing.T) {
		m := newTest(Suspend, 1)
		w := rv("w", 0, 0)
		m.PostRecv(w)
		m.Fail(1)
		m.Purge(1)
		if got := names(m.Fail(1)); !slices.Equal(got, []string{"w"}) {
			t.Fatalf("Fail(1) after Purge(1) = %v, want [w]", got)
		}
	})
	t.Run("healthy source", func(t *testing.T) {
		m := newTest(NeverSuspend, 1, 2)
		r := rv("r", tg(2, 5), exact)
		m.PostRecv(r)
		m.Arrive(ms("x", 2, 6))
		m.Arrive(ms("y", 1, 6))
		onlyS, msgs, pairs := m.Purge(2)
		if !slices.Equal(names(onlyS), []string{"r"}) || !slices.Equal(names(msgs), []string{"x"}) || pairs != nil {
			t.Fatalf("Purge(2) = %v %v %v", names(onlyS), names(msgs), pairNames(pairs))
		}
		if p, u := m.Len(); p != 0 || u != 1 {
			t.Fatalf("Len = %d,%d want 0,1", p, u)
		}
	})
}

func TestFastPathAllocs(t *testing.T) {
	m := newTest(Suspend, 1)
	r := &Recv{Tag: tg(1, 5), Mask: exact}
	w := &Recv{Tag: tg(0, 5), Mask: anySrc}
	msg := &Msg{Src: 1, Tag: tg(1, 5)}
	allocs := testing.AllocsPerRun(100, func() {
		m.PostRecv(r)
		m.Arrive(msg)
		m.Arrive(msg)
		m.PostRecv(w)
		m.Probe(0, 0, false)
		m.Arrive(msg)
		m.PostRecv(r)
		m.CancelRecv(r)
	})
	if allocs != 0 {
		t.Fatalf("fast path allocates %.1f times per run", allocs)
	}
}

// Exact receives and unexpected messages whose tags share a hash bucket
// still match by their own tag, in order.
func TestBucketCollision(t *testing.T) {
	t1 := tg(1, 1)
	var t2 uint64
	for x := t1 + 1; ; x++ {
		if bucket(x) == bucket(t1) {
			t2 = x
			break
		}
	}
	m := newTest(Suspend)
	a, b, c := rv("a", t1, exact), rv("b", t2, exact), rv("c", t1, exact)
	m.PostRecv(a)
	m.PostRecv(b)
	m.PostRecv(c)
	if got := m.Arrive(&Msg{Tag: t2}); got != b {
		t.Fatalf("Arrive t2 took %v, want b", got)
	}
	if got := m.Arrive(&Msg{Tag: t1}); got != a {
		t.Fatalf("Arrive t1 took %v, want a", got)
	}
	if !m.CancelRecv(c) {
		t.Fatal("c not posted")
	}
	x, y, z := &Msg{Tag: t1, Data: "x"}, &Msg{Tag: t2, Data: "y"}, &Msg{Tag: t1, Data: "z"}
	m.Arrive(x)
	m.Arrive(y)
	m.Arrive(z)
	if got := m.PostRecv(rv("", t2, exact)); got != y {
		t.Fatalf("PostRecv t2 took %v, want y", got)
	}
	if !m.RemoveMsg(x) {
		t.Fatal("x not queued")
	}
	if got := m.PostRecv(rv("", t1, exact)); got != z {
		t.Fatalf("PostRecv t1 took %v, want z", got)
	}
	if p, u := m.Len(); p != 0 || u != 0 {
		t.Fatalf("Len = %d,%d", p, u)
	}
}

// After Purge a source is gone: receives posted later that can only match
// it are dead at once, wildcards and receives for other ranks are not,
// and a new source with its source tag makes its rank matchable again.
func TestGone(t *testing.T) {
	for _, mode := range []Mode{Suspend, NeverSuspend} {
		t.Run(mode.String(), func(t *testing.T) {
			m := newTest(mode, 1, 2)
			m.Fail(1)
			m.Purge(1)
			if !m.Gone(1) || m.Failed(1) || m.Suspended() {
				t.Fatalf("after Purge(1): gone %v failed %v suspended %v", m.Gone(1), m.Failed(1), m.Suspended())
			}
			for _, c := range []struct {
				r    *Recv
				want Notice
			}{
				{rv("exact1", tg(1, 5), exact), NoticePeerFailed},
				{rv("anytag1", tg(1, 0), anyTag), NoticePeerFailed},
				{rv("wild", tg(0, 5), anySrc), NoticeNone},
				{rv("anyrank", tg(0, 5), ^uint64(0)&^(1<<32)), NoticeNone}, // mask lacks a rank bit
				{rv("exact2", tg(2, 5), exact), NoticeNone},
				{rv("exact3", tg(3, 5), exact), NoticeNone}, // no source has rank 3
			} {
				if m.PostRecv(c.r) != nil {
					t.Fatalf("%s matched", c.r.Data)
				}
				n, s := m.CheckPosted(c.r)
				if n != c.want || n == NoticePeerFailed && (s != 1 || c.r.Posted()) {
					t.Errorf("%s: CheckPosted = %v,%d posted %v, want %v", c.r.Data, n, s, c.r.Posted(), c.want)
				}
			}
			// A new source with rank 1 (a new endpoint to the peer that
			// replaced the purged one): receives for rank 1 wait for it.
			m.SetSourceTag(7, tg(1, 0))
			if m.Gone(1) {
				t.Fatal("the gone source of rank 1 is remembered after a new source took its rank")
			}
			r := rv("again", tg(1, 9), exact)
			m.PostRecv(r)
			if n, _ := m.CheckPosted(r); n != NoticeNone {
				t.Fatalf("receive for the rejoined rank: %v", n)
			}
			if got := m.Arrive(&Msg{Src: 7, Tag: tg(1, 9)}); got != r {
				t.Fatalf("message from the new source took %v, want again", got)
			}
		})
	}
}

// A source that is purged while another source with the same source tag
// is live (the peer already reconnected) fails nothing of that rank.
func TestGoneLiveSibling(t *testing.T) {
	m := newTest(Suspend, 1)
	m.SetSourceTag(7, tg(1, 0)) // second endpoint, same rank
	r := rv("r", tg(1, 5), exact)
	m.PostRecv(r)
	if got := names(m.Fail(1)); !slices.Equal(got, []string{"r"}) {
		t.Fatalf("Fail(1) = %v, want [r] told", got)
	}
	onlyS, _, _ := m.Purge(1)
	if len(onlyS) != 0 || !r.Posted() {
		t.Fatalf("Purge(1) with a live source of rank 1 removed %v", names(onlyS))
	}
	r2 := rv("r2", tg(1, 6), exact)
	m.PostRecv(r2)
	if n, _ := m.CheckPosted(r2); n != NoticeNone {
		t.Fatalf("new receive for rank 1: %v", n)
	}
	// now the live one fails too: in NeverSuspend mode both would go;
	// here they are told, and dead once purged
	m.Fail(7)
	onlyS, _, _ = m.Purge(7)
	if !slices.Equal(names(onlyS), []string{"r", "r2"}) {
		t.Fatalf("Purge(7) = %v, want [r r2]", names(onlyS))
	}
}

// While matching is suspended a receive posted for the failed source's
// rank is dead at once, unless an unexpected message (sent before the
// failure) matches it: then it waits for Resume or Purge like the rest.
func TestDeadWhileSuspended(t *testing.T) {
	m := newTest(Suspend, 1, 2)
	x := ms("x", 1, 5)
	m.Arrive(x)
	m.Fail(1)
	r := rv("r", tg(1, 6), exact)
	m.PostRecv(r)
	if n, s := m.CheckPosted(r); n != NoticePeerFailed || s != 1 || r.Posted() {
		t.Fatalf("CheckPosted = %v,%d posted %v, want PeerFailed,1 removed", n, s, r.Posted())
	}
	rx := rv("rx", tg(1, 5), exact)
	m.PostRecv(rx)
	if n, s := m.CheckPosted(rx); n != NoticeFailedPending || s != 1 || !rx.Posted() {
		t.Fatalf("CheckPosted with x queued = %v,%d posted %v, want FailedPending,1", n, s, rx.Posted())
	}
	if got := pairNames(m.Resume()); !slices.Equal(got, []string{"rx=x"}) {
		t.Fatalf("Resume = %v, want [rx=x]", got)
	}
}

// NeverSuspend: Fail removes the receives of the failed source's rank
// unless another source of that rank is live.
func TestFailNeverSuspendSibling(t *testing.T) {
	m := newTest(NeverSuspend, 1)
	m.SetSourceTag(7, tg(1, 0))
	r := rv("r", tg(1, 5), exact)
	m.PostRecv(r)
	if got := m.Fail(1); len(got) != 0 {
		t.Fatalf("Fail(1) with a live sibling = %v", names(got))
	}
	if got := names(m.Fail(7)); !slices.Equal(got, []string{"r"}) {
		t.Fatalf("Fail(7) = %v, want [r]", got)
	}
}

// size counts the sources and gone sources the matcher holds state for.
func (m *Matcher) size() (srcs, down int) {
	for _, rs := range m.ranks {
		down += len(rs.down)
	}
	return len(m.srcs), down
}

// A matcher that fails and purges many sources holds no state for them
// without a SourceMask (or without a source tag), and at most one gone
// source per rank with one, the last purged: receives for the rank stay
// dead and name it.
func TestPurgeBounded(t *testing.T) {
	const ranks, rounds, batch = 4, 200, 5
	for _, mode := range []Mode{Suspend, NeverSuspend} {
		for _, sm := range []uint64{0, tSrcMask} {
			t.Run(mode.String()+"/"+map[bool]string{true: "mask", false: "nomask"}[sm != 0], func(t *testing.T) {
				m := New(Config{Mode: mode, SourceMask: sm})
				live := Src(1 << 20) // a source that stays, rank 0
				m.SetSourceTag(live, tg(0, 0))
				next := Src(1)
				for round := range rounds {
					rank := Src(1 + round%ranks)
					// a batch of endpoints to the same rank, all failed
					// and purged; one without a source tag
					var b []Src
					for range batch {
						m.SetSourceTag(next, tg(rank, 0))
						b = append(b, next)
						next++
					}
					b = append(b, next)
					next++
					for _, s := range b {
						m.Fail(s)
					}
					for _, s := range b {
						m.Purge(s)
					}
					srcs, down := m.size()
					want := 1 // live
					if sm != 0 {
						want += min(round+1, ranks)
					}
					if srcs != want || sm != 0 && down != want-1 || sm == 0 && down != 0 {
						t.Fatalf("round %d: %d sources, %d gone, want %d, %d", round, srcs, down, want, want-1)
					}
					if sm == 0 {
						continue
					}
					last := b[batch-1]
					if !m.Gone(last) || m.Gone(b[0]) || m.Gone(b[batch]) {
						t.Fatalf("round %d: gone %v %v %v, want true false false", round, m.Gone(last), m.Gone(b[0]), m.Gone(b[batch]))
					}
					r := rv("r", tg(rank, 1), exact)
					m.PostRecv(r)
					if n, s := m.CheckPosted(r); n != NoticePeerFailed || s != last {
						t.Fatalf("round %d: CheckPosted = %v,%d want PeerFailed,%d", round, n, s, last)
					}
				}
				if m.Suspended() {
					t.Fatal("suspended after every failed source was purged")
				}
			})
		}
	}
}
