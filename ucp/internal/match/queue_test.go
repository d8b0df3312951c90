package match

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQueue(t *testing.T) {
	q := NewQueue()
	a := &Frag{Src: 1, ID: 10, Data: "a"}
	b := &Frag{Src: 2, ID: 10, Data: "b"} // same id, other source
	c := &Frag{Src: 1, ID: 11, Data: "c"}
	for _, f := range []*Frag{a, b, c} {
		if !q.Add(f) {
			t.Fatalf("Add %v refused", f.Data)
		}
	}
	if q.Add(&Frag{Src: 1, ID: 10}) {
		t.Fatal("Add of a duplicate key accepted")
	}
	if q.Len() != 3 || q.LenSrc(1) != 2 || q.LenSrc(2) != 1 || q.LenSrc(3) != 0 {
		t.Fatalf("Len %d, LenSrc 1:%d 2:%d 3:%d", q.Len(), q.LenSrc(1), q.LenSrc(2), q.LenSrc(3))
	}
	if q.Get(2, 10) != b || q.Get(1, 10) != a || q.Get(3, 10) != nil {
		t.Fatal("Get by (Src, ID) wrong")
	}
	if q.Take(1, 10) != a || a.Queued() || q.Take(1, 10) != nil {
		t.Fatal("Take: want a once, then nil")
	}
	if !q.Add(a) { // reuse after removal
		t.Fatal("re-Add of a taken Frag refused")
	}
	got := q.Purge(1)
	if len(got) != 2 || got[0] != c || got[1] != a {
		t.Fatalf("Purge(1) = %v, want [c a] (insertion order)", got)
	}
	if q.Purge(1) != nil || q.Len() != 1 || !q.Remove(b) || q.Remove(b) || q.Len() != 0 {
		t.Fatal("after Purge: want empty source 1, b removable once")
	}
}

func TestQueueAddQueuedPanics(t *testing.T) {
	q := NewQueue()
	f := &Frag{Src: 1, ID: 1}
	q.Add(f)
	defer func() {
		if recover() == nil {
			t.Fatal("Add of a queued Frag did not panic")
		}
	}()
	q.Add(f)
}

// TestQueueModel runs random operations against a slice of keys in
// insertion order.
func TestQueueModel(t *testing.T) {
	for seed := range 50 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		q := NewQueue()
		var ref []*Frag // insertion order
		pool := make([]*Frag, 32)
		for i := range pool {
			pool[i] = &Frag{}
		}
		for range 2000 {
			s, id := Src(rng.IntN(3)), uint64(rng.IntN(6))
			refFind := func() int {
				return slices.IndexFunc(ref, func(f *Frag) bool { return f.Src == s && f.ID == id })
			}
			switch rng.IntN(5) {
			case 0, 1:
				f := pool[rng.IntN(len(pool))]
				if f.Queued() {
					continue
				}
				f.Src, f.ID = s, id
				want := refFind() < 0
				if want {
					ref = append(ref, f)
				}
				if got := q.Add(f); got != want {
					t.Fatalf("seed %d: Add(%d,%d) = %v want %v", seed, s, id, got, want)
				}
			case 2:
				var want *Frag
				if i := refFind(); i >= 0 {
					want = ref[i]
					ref = slices.Delete(ref, i, i+1)
				}
				if got := q.Take(s, id); got != want {
					t.Fatalf("seed %d: Take(%d,%d) wrong", seed, s, id)
				}
			case 3:
				var want *Frag
				if i := refFind(); i >= 0 {
					want = ref[i]
				}
				if got := q.Get(s, id); got != want {
					t.Fatalf("seed %d: Get(%d,%d) wrong", seed, s, id)
				}
			case 4:
				if rng.IntN(4) != 0 {
					continue
				}
				var want []*Frag
				ref = slices.DeleteFunc(ref, func(f *Frag) bool {
					if f.Src == s {
						want = append(want, f)
					}
					return f.Src == s
				})
				if got := q.Purge(s); !slices.Equal(got, want) {
					t.Fatalf("seed %d: Purge(%d) = %d frags, want %d in insertion order", seed, s, len(got), len(want))
				}
			}
			if q.Len() != len(ref) {
				t.Fatalf("seed %d: Len %d want %d", seed, q.Len(), len(ref))
			}
		}
	}
}

func TestQueueAllocs(t *testing.T) {
	q := NewQueue()
	f := &Frag{Src: 1, ID: 5}
	q.Add(f)
	q.Take(1, 5)
	allocs := testing.AllocsPerRun(100, func() {
		q.Add(f)
		q.Get(1, 5)
		q.Take(1, 5)
		q.Add(f)
		q.Remove(f)
	})
	if allocs != 0 {
		t.Fatalf("Queue steady state allocates %.1f times per run", allocs)
	}
}

func BenchmarkQueueAddTake(b *testing.B) {
	q := NewQueue()
	f := &Frag{Src: 1}
	b.ReportAllocs()
	for i := range uint64(b.N) {
		f.ID = i
		q.Add(f)
		if q.Take(1, i) != f {
			b.Fatal("Take lost the Frag")
		}
	}
}
