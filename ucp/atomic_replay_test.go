package ucp

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/internal/fault"
)

func init() {
	// foatomsink: give rank 0 the address and key of memory for its
	// atomics (as fosink does), then progress; each line "count" on
	// stdin is answered with "applied A replayed R" (the worker's
	// AtomicsApplied and Replayed), and "end" or EOF ends it (bounded:
	// two minutes).
	childRoles["foatomsink"] = func(nd *node) error {
		mem, err := shareMem(nd, foMemSize, nil)
		if err != nil {
			return err
		}
		defer mem.Close()
		lines := make(chan string, 4)
		go func() {
			defer close(lines)
			br := bufio.NewReader(os.Stdin)
			for {
				l, err := br.ReadString('\n')
				if err != nil {
					return
				}
				lines <- strings.TrimSpace(l)
			}
		}()
		for stop := time.Now().Add(2 * time.Minute); time.Now().Before(stop); {
			select {
			case l, ok := <-lines:
				if !ok || l != "count" {
					return nil
				}
				st := nd.w.Stats()
				fmt.Printf("applied %d replayed %d\n", st.AtomicsApplied, st.Replayed)
			default:
				nd.w.Progress()
			}
		}
		return nil
	}
}

// TestAtomicAnswerReplayed: two namespaces joined by two rails, failover
// to the same transport. An eBPF program drops every RoCE packet arriving
// on our end of the rail that carries the endpoint's traffic, so the
// peer receives our atomic fetch-adds and applies them, but their
// answers (and the transport's acknowledgements) never reach us; the
// lane then fails (its work requests run out of retries, or its probes
// go unanswered) and the endpoint moves to the other rail (or the peer,
// whose answers go unacknowledged, moves first and tells us). The peer has
// applied every atomic once before the move; the answers it replays from
// its log over the new lane complete each atomic once, without error,
// with the value the target fetched: distinct values 0..n-1, the word n
// afterwards, and the peer applied n atomics, not more.
func TestAtomicAnswerReplayed(t *testing.T) {
	cfg := Config{Failover: failover.Policy{Mode: failover.SameTransport}, ErrorMode: ErrorModePeer}
	env := []string{EnvFailover + "=same", EnvErrMode + "=peer"}
	nd, rails := foRailsWorld(t, "foatomsink", cfg, 2*time.Second, env...)
	child := nd.kids[1]
	var line string
	if err := child.Scan(childWait, &line); err != nil || line != connectedLine {
		t.Fatalf("the peer did not connect: %q %v", line, err)
	}
	ep := nd.eps[1]
	if len(ep.lanes) != 2 || ep.fo == nil {
		t.Fatalf("%d lanes, sequenced %v: want two rails with failover", len(ep.lanes), ep.fo != nil)
	}
	var evs []failover.Event
	nd.w.SetFailoverHandler(func(e failover.Event) { evs = append(evs, e) })
	kb := make([]byte, 4096)
	kr := nd.w.TagRecv(kb, mkTag(1, foTagKey), exact, nil)
	nd.must(nd.wait(kr))
	rk, err := ep.UnpackRKey(kb[8:kr.Info().Length])
	nd.must(err)
	t.Cleanup(func() { rk.Close() })
	word := binary.LittleEndian.Uint64(kb) + foWordOff
	count := func() (applied, replayed uint64) {
		t.Helper()
		fmt.Fprintln(child.Stdin, "count")
		var w1, w2 string
		if err := child.Scan(childWait, &w1, &applied, &w2, &replayed); err != nil || w1 != "applied" {
			t.Fatalf("the peer's count: %q %v", w1, err)
		}
		return applied, replayed
	}
	rail := -1
	for i, a := range rails.A {
		if a.Link() == ep.lanes[ep.amLane].attr.Device {
			rail = i
		}
	}
	if rail < 0 {
		t.Fatalf("the AM lane's device %s is no rail", ep.lanes[ep.amLane].attr.Device)
	}
	err = rails.A[rail].Do(func() error {
		f, err := fault.Drop(rails.A[rail].Link(), fault.Config{OnlyUDPPort: fault.RoCEv2Port, BlackHole: true})
		if err == nil {
			t.Cleanup(func() { f.Close() })
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	res := make([]uint64, n)
	done := make([]int, n)
	reqs := make([]*Request, n)
	for i := range reqs {
		reqs[i] = ep.AtomicFetch(AtomicAdd, 1, 0, &res[i], word, rk, &Params{UserData: i,
			Callback: func(r *Request) { done[r.UserData().(int)]++ }})
	}
	// the peer applies them all while their answers are lost
	for stop := time.Now().Add(30 * time.Second); ; {
		for i := 0; i < 100; i++ {
			nd.w.Progress()
		}
		if a, _ := count(); a == n {
			break
		}
		if time.Now().After(stop) {
			t.Fatal("the peer did not apply the atomics")
		}
	}
	if _, rep := count(); rep == 0 {
		for i, r := range reqs {
			if r.Done() && len(evs) == 0 {
				t.Fatalf("atomic %d completed (%v) before any failover, its answer dropped", i, r.Err())
			}
		}
	}
	nd.progressUntil("the atomics", func() bool {
		for _, d := range done {
			if d == 0 {
				return false
			}
		}
		return true
	})
	seen := map[uint64]bool{}
	for i, r := range reqs {
		if r.Err() != nil {
			t.Fatalf("atomic %d: %v", i, r.Err())
		}
		if res[i] >= n || seen[res[i]] {
			t.Fatalf("atomic %d fetched %d: applied twice or a value not the target's", i, res[i])
		}
		seen[res[i]] = true
	}
	back := make([]byte, 8)
	nd.must(nd.wait(ep.Get(back, word, rk, nil)))
	if v := binary.LittleEndian.Uint64(back); v != n {
		t.Fatalf("the word is %d after %d adds", v, n)
	}
	for i, d := range done {
		if d != 1 {
			t.Fatalf("atomic %d completed %d times", i, d)
		}
	}
	applied, replayed := count()
	if applied != n || replayed == 0 {
		t.Fatalf("the peer applied %d atomics (want %d) and replayed %d messages (want its answers)", applied, n, replayed)
	}
	// the peer, whose answers went unacknowledged, may have moved first
	// (its replay is what completed the atomics); a move of ours is from
	// the faulted rail
	if len(evs) > 0 && (evs[0].Kind != failover.FailedOver || evs[0].From.Device != rails.A[rail].Link()) {
		t.Fatalf("events %v: want a failover from %s", evs, rails.A[rail].Link())
	}
	fmt.Fprintln(child.Stdin, "end")
	t.Logf("events %v; the peer replayed %d messages", evs, replayed)
}
