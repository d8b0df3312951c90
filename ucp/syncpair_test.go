package ucp

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// syncPair is two workers of one host over shm and rc (failover to any
// transport), an endpoint each way, both on shm, and the failover events
// each worker heard.
type syncPair struct {
	ws     [2]*Worker
	ab, ba *Endpoint
	evs    [2][]failover.Event
	dev    *shm.Iface // worker 0's shm device
}

func newSyncPair(t *testing.T) *syncPair {
	pol := failover.DefaultPolicy()
	pol.Mode = failover.AnyTransport
	p := &syncPair{ws: standbyPair(t, pol)}
	for i, w := range p.ws {
		w.SetFailoverHandler(func(ev failover.Event) { p.evs[i] = append(p.evs[i], ev) })
	}
	ab, err := p.ws[0].Connect(p.ws[1].Address(), EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	p.ab = ab
	p.ba = tagOver(t, p.ws[:], ab, p.ws[1], 1, []byte("over shm"))
	p.dev = p.ws[0].ifaces[0].it.(*shm.Iface)
	return p
}

// setDevice sets worker 0's shm device to st.
func (p *syncPair) setDevice(t *testing.T, st uct.DeviceStatus) {
	t.Helper()
	if err := p.dev.SetDeviceStatus(st); err != nil {
		t.Fatal(err)
	}
}

// failOverToRC disables worker 0's shm device and waits until both
// sides have failed over to rc and their syncs are answered.
func (p *syncPair) failOverToRC(t *testing.T) {
	t.Helper()
	p.setDevice(t, uct.DeviceRDMADisabled)
	p.wait(t, "both sides failed over to rc", func() bool {
		return p.count(0, failover.FailedOver) > 0 && p.count(1, failover.FailedOver) > 0 && p.on("rc") &&
			!p.syncing(0) && !p.syncing(1)
	})
}

// loseNextSync makes worker 0 lose the next sync it sends
// (syncNums.loseSyncs).
func (p *syncPair) loseNextSync() {
	p.ws[0].lock()
	p.ab.fo.syncs.loseSyncs = 1
	p.ws[0].unlock()
}

// syncLost reports whether the sync loseNextSync asked for is lost.
func (p *syncPair) syncLost() bool {
	p.ws[0].lock()
	defer p.ws[0].unlock()
	return p.ab.fo.syncs.loseSyncs == 0
}

// wait progresses both workers until cond holds, failing the test with
// both endpoints' state after 10 s.
func (p *syncPair) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		for _, w := range p.ws {
			w.Progress()
		}
		if time.Now().After(deadline) {
			var st [2]string
			for i, ep := range []*Endpoint{p.ab, p.ba} {
				p.ws[i].lock()
				st[i] = ep.foDump()
				p.ws[i].unlock()
			}
			t.Fatalf("timed out waiting for %s; worker 0: %s; worker 1: %s; events %v / %v", what, st[0], st[1], p.evs[0], p.evs[1])
		}
	}
}

// count returns how many events of kind worker i heard.
func (p *syncPair) count(i int, kind failover.Kind) int {
	n := 0
	for _, ev := range p.evs[i] {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// on reports whether both endpoints' AM lanes are of transport tl.
func (p *syncPair) on(tl string) bool {
	for i, ep := range []*Endpoint{p.ab, p.ba} {
		p.ws[i].lock()
		ok := ep.amLane >= 0 && ep.lanes[ep.amLane].attr.Transport == tl
		p.ws[i].unlock()
		if !ok {
			return false
		}
	}
	return true
}

// laneOf returns the iface of ep's lane of transport tl (lock held).
func (p *syncPair) laneOf(ep *Endpoint, tl string) *wiface {
	for i := range ep.lanes {
		if ep.lanes[i].attr.Transport == tl {
			return ep.lanes[i].wi
		}
	}
	return nil
}

// syncing reports whether worker i's endpoint waits for its sync's
// answer.
func (p *syncPair) syncing(i int) bool {
	ep := []*Endpoint{p.ab, p.ba}[i]
	p.ws[i].lock()
	defer p.ws[i].unlock()
	return ep.fo.fov.syncing
}

// stream sends n tag messages each way at once and checks that every
// send and receive completes once, the receives in order with the right
// bytes.
func (p *syncPair) stream(t *testing.T, tag uint64, n int) {
	t.Helper()
	type dir struct {
		from *Endpoint
		to   *Worker
	}
	var done []int
	var recvs, sends []*Request
	var bufs [][]byte
	for d, x := range []dir{{p.ab, p.ws[1]}, {p.ba, p.ws[0]}} {
		for i := 0; i < n; i++ {
			k := len(done)
			done = append(done, 0, 0)
			b := make([]byte, 200)
			bufs = append(bufs, b)
			recvs = append(recvs, x.to.TagRecv(b, tag+uint64(d), exact, &Params{Callback: func(*Request) { done[k]++ }}))
			sends = append(sends, x.from.TagSend(pattern(100+i, byte(i+d)), tag+uint64(d), &Params{Callback: func(*Request) { done[k+1]++ }}))
		}
	}
	p.wait(t, fmt.Sprintf("%d tag messages each way", n), func() bool {
		for _, c := range done {
			if c == 0 {
				return false
			}
		}
		return true
	})
	for k, c := range done {
		if c != 1 {
			t.Fatalf("request %d completed %d times", k, c)
		}
	}
	for j, r := range recvs {
		d, i := j/n, j%n
		if r.Err() != nil || sends[j].Err() != nil {
			t.Fatalf("direction %d message %d: recv %v, send %v", d, i, r.Err(), sends[j].Err())
		}
		if got := bufs[j][:r.Info().Length]; !bytes.Equal(got, pattern(100+i, byte(i+d))) {
			t.Fatalf("direction %d: receive %d got %d bytes, not message %d", d, i, len(got), i)
		}
		r.Release()
		sends[j].Release()
	}
}
