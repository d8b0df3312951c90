package bootstrap

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/ucp"
)

func init() {
	childRoles["world"] = worldChild
}

// memPM is a process manager of one rank in memory, with a small value
// limit so that addresses are published in chunks.
type memPM struct {
	kvs       map[string]string
	maxValue  int
	finalized bool
}

func (m *memPM) Rank() int               { return 0 }
func (m *memPM) Size() int               { return 1 }
func (m *memPM) Version() int            { return 2 }
func (m *memPM) MaxValue() int           { return m.maxValue }
func (m *memPM) Put(k, v string) error   { m.kvs[k] = v; return nil }
func (m *memPM) Barrier() error          { return nil }
func (m *memPM) Abort(int, string) error { return nil }
func (m *memPM) Finalize() error         { m.finalized = true; return nil }
func (m *memPM) Close() error            { return nil }
func (m *memPM) Get(k string) (string, error) {
	v, ok := m.kvs[k]
	if !ok {
		return "", fmt.Errorf("no key %q", k)
	}
	if len(v) > m.maxValue {
		return "", fmt.Errorf("value of %d bytes over the limit", len(v))
	}
	return v, nil
}

// A world of one rank over a process manager with 16-byte values: the
// address is published in chunks and read back whole, and the rank talks
// to itself with its rank in the tag.
func TestWorldSelf(t *testing.T) {
	pm := &memPM{kvs: map[string]string{}, maxValue: 16}
	w, err := NewWorld(pm, WorldOptions{Eager: true, Config: ucp.Config{Transports: nil}})
	if err != nil {
		t.Fatal(err)
	}
	if n := pm.kvs["ucgo-addr-0"]; n == "" || n == "1" {
		t.Fatalf("address published in %q chunks; want several", n)
	}
	a, err := w.Address(0)
	if err != nil || string(a) != string(w.Worker.Address()) {
		t.Fatalf("address read back: %x, %v; want %x", a, err, w.Worker.Address())
	}
	ep, err := w.EP(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	buf := make([]byte, 16)
	rr := w.Worker.TagRecv(buf, Tag(0, 5), Exact, nil)
	if err := ep.TagSend([]byte("self"), Tag(0, 5), nil).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rr.Wait(ctx); err != nil || string(buf[:rr.Info().Length]) != "self" || TagRank(rr.Info().Tag) != 0 {
		t.Fatalf("receive: %v, %q", err, buf[:rr.Info().Length])
	}
	if _, err := w.EP(1); err == nil {
		t.Fatal("EP(1) in a world of one")
	}
	if err := w.Close(); err != nil || !pm.finalized {
		t.Fatalf("close: %v, finalized %v", err, pm.finalized)
	}
}

func TestTag(t *testing.T) {
	tag := Tag(MaxRanks-1, 0xffffffffffffffff)
	if TagRank(tag) != MaxRanks-1 || tag&AnyRank != AnyRank {
		t.Fatalf("tag %x", tag)
	}
	if Tag(3, 7)&RankMask != 3<<RankShift || Tag(3, 7)&AnyRank != 7 {
		t.Fatalf("tag %x", Tag(3, 7))
	}
}

// worldChild: every rank sends a message to every rank (itself included)
// and receives one from each, naming the sender in the receive's tag.
func worldChild() error {
	w, err := Start(WorldOptions{Eager: os.Getenv("UCGO_WORLD_EAGER") == "1"})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	me, n := w.Rank(), w.Size()
	bufs := make([][]byte, n)
	var recvs, sends []*ucp.Request
	for r := 0; r < n; r++ {
		bufs[r] = make([]byte, 64)
		recvs = append(recvs, w.Worker.TagRecv(bufs[r], Tag(r, 7), Exact, nil))
	}
	for r := 0; r < n; r++ {
		ep, err := w.EP((me + r) % n)
		if err != nil {
			return err
		}
		sends = append(sends, ep.TagSend([]byte(fmt.Sprintf("%d>%d", me, (me+r)%n)), Tag(me, 7), nil))
	}
	var got []string
	for r, req := range append(recvs, sends...) {
		if err := req.Wait(ctx); err != nil {
			return err
		}
		if r < n {
			got = append(got, string(bufs[r][:req.Info().Length]))
		}
	}
	if err := w.Barrier(); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d pmi-%d got %s\n", me, n, w.PM.Version(), strings.Join(got, " "))
	return w.Close()
}

// Three ranks under mpiexec in both protocol versions, connecting at once
// and lazily, exchange messages with every rank.
func TestMPIExecWorld(t *testing.T) {
	for _, v := range []int{1, 2} {
		for _, eager := range []string{"0", "1"} {
			t.Run(fmt.Sprintf("pmi%d-eager%s", v, eager), func(t *testing.T) {
				out, err := mpiexec(t, 3, "world", 2*time.Minute, nil, fmt.Sprintf("UCGO_PMI=%d", v), "UCGO_WORLD_EAGER="+eager)
				if err != nil {
					t.Fatalf("mpiexec: %v\n%s", err, out)
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				sort.Strings(lines)
				var want []string
				for r := 0; r < 3; r++ {
					want = append(want, fmt.Sprintf("rank %d of 3 pmi-%d got 0>%d 1>%d 2>%d", r, v, r, r, r))
				}
				if strings.Join(lines, "\n") != strings.Join(want, "\n") {
					t.Errorf("output:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
				}
			})
		}
	}
}
