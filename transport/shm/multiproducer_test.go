package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/release"
	"github.com/ucgo/ucgo/uct"
)

// blastCount is how many messages each "blast" child sends.
const blastCount = 20000

// blastPayload is message seq's payload: short messages carry 8 bytes,
// every third message goes by copy with 300 bytes (a cell's buffer).
func blastPayload(pid, seq int) []byte {
	n := 8
	if seq%3 == 2 {
		n = 300
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(pid + seq*7 + i)
	}
	return b
}

// blast sends blastCount messages to the parent, retrying while its FIFO
// is full (bounded).
func blast(ep *Endpoint, it uct.Iface) error {
	for seq := 0; seq < blastCount; seq++ {
		if err := sendBlast(ep, it, seq); err != nil {
			return fmt.Errorf("blast: %w", err)
		}
	}
	return nil
}

// sendBlast sends message seq of this process in the blast format,
// retrying (bounded) while the peer FIFO is full.
func sendBlast(ep *Endpoint, it uct.Iface, seq int) error {
	hdr := uint64(os.Getpid())<<32 | uint64(seq)
	pl := blastPayload(os.Getpid(), seq)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var err error
		if len(pl) == 8 {
			err = ep.AMShort(amBlast, hdr, pl)
		} else {
			_, err = ep.AMBcopy(amBlast, binary.LittleEndian.AppendUint64(nil, hdr), pl)
		}
		if !errors.Is(err, uct.ErrNoResource) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("peer FIFO full for 2 minutes")
		}
		it.Progress()
		runtime.Gosched()
	}
}

// Several processes send into one FIFO at once, short and copied messages
// mixed, while the receiver sleeps in Arm/Wait whenever it finds nothing:
// every message arrives once, intact, in its sender's order, and no
// wake-up is lost for good (each Wait is bounded; the run is bounded).
func TestMultiProducerStress(t *testing.T) {
	_, it := openIface(t)
	const producers = 3
	c := checkBlast(it)
	var eps []uct.Endpoint
	var kids []*child
	for i := 0; i < producers; i++ {
		c := startChild(t, "blast")
		kids = append(kids, c)
		eps = append(eps, c.connect(t, it))
	}
	deadline := time.Now().Add(3 * time.Minute)
	sleeps := 0
	for c.total < producers*blastCount && c.bad == nil {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d messages in 3 minutes", c.total, producers*blastCount)
		}
		if it.Progress() == 0 && it.Arm() == nil {
			sleeps++
			if err := it.Wait(timeoutCtx(5 * time.Second)); err != nil {
				t.Fatalf("wait: %v", err)
			}
		}
	}
	if c.bad != nil {
		t.Fatal(c.bad)
	}
	if len(c.next) != producers {
		t.Fatalf("messages from %d senders, want %d", len(c.next), producers)
	}
	for i, ep := range eps {
		sendRetry(t, it, func() error { return ep.AMShort(amQuit, 0, nil) })
		if err := kids[i].cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	t.Logf("%d messages from %d processes; the receiver slept %d times", c.total, producers, sleeps)
}

// A receiver must not sleep while the head cell is claimed: its sender
// may have looked for a sleeper before the receiver announced itself, and
// then publishes without a wake-up (ring.publish). Arm reports it busy,
// and Wait returns at once.
func TestArmBusyWhileClaimed(t *testing.T) {
	_, it := openIface(t)
	_, peer := openIface(t)
	uep, err := peer.Connect(it.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	ep := uep.(*Endpoint)
	got := 0
	it.SetAMHandler(amBlast, func(any, []byte, uct.AMFlags) { got++ }, nil)
	if err := it.Arm(); err != nil {
		t.Fatalf("arm on an empty FIFO: %v", err)
	}
	c, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		t.Fatal("no cell")
	}
	if err := it.Arm(); !errors.Is(err, uct.ErrBusy) {
		t.Fatalf("arm with the head cell claimed: %v, want ErrBusy", err)
	}
	if err := it.Wait(timeoutCtx(10 * time.Second)); err != nil {
		t.Fatalf("wait with the head cell claimed: %v", err)
	}
	cell := ep.tx.cell(c)
	*u32at(cell, 8) = 0
	cell[12] = amBlast
	ep.tx.publish(c)
	if it.Progress() != 1 || got != 1 {
		t.Fatalf("delivered %d", got)
	}
}

// A sender delayed between its claim and its store of the tail sets the
// tail back (ring.reserve). The next sender walks it forward past the
// cells claimed, published and consumed since, and claims the first free
// one: no cell is claimed twice and none is skipped.
func TestReserveAfterTailSetBack(t *testing.T) {
	_, it := openIface(t)
	_, peer := openIface(t)
	uep, err := peer.Connect(it.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	ep := uep.(*Endpoint)
	var got []uint64
	it.SetAMHandler(amBlast, func(_ any, d []byte, _ uct.AMFlags) { got = append(got, binary.LittleEndian.Uint64(d)) }, nil)
	for i := uint64(0); i < 10; i++ {
		if err := ep.AMShort(amBlast, i, nil); err != nil {
			t.Fatal(err)
		}
	}
	// the receiver consumes them all (the last one is not yet released)
	progressUntil(t, it, "ten", func() bool { return len(got) == 10 })
	// a late claimer of cell 1 stores the tail back to 2
	release.Store(ep.tx.tail, 2)
	done := make(chan uint64, 1)
	go func() {
		c, ok := ep.tx.reserve(ep.it.me)
		if !ok {
			c = ^uint64(0)
		}
		done <- c
	}()
	select {
	case c := <-done:
		if c != 10 {
			t.Fatalf("claimed cell %d, want 10", c)
		}
		cell := ep.tx.cell(c)
		*u64at(cell, cellHdr) = 10
		*u32at(cell, 8) = 8
		cell[12] = amBlast
		ep.tx.publish(c)
	case <-time.After(10 * time.Second):
		t.Fatal("reserve did not return with the tail set back")
	}
	if err := ep.AMShort(amBlast, 11, nil); err != nil {
		t.Fatal(err)
	}
	progressUntil(t, it, "all", func() bool { return len(got) == 12 })
	for i, v := range got {
		if v != uint64(i) {
			t.Fatalf("message %d is %d", i, v)
		}
	}
}

// blastCheck checks the amBlast messages an iface receives: every
// sender's (pid's) messages arrive in its order, each intact.
type blastCheck struct {
	next  map[int]int // pid -> next sequence
	total int
	bad   error // the first fault found
}

// checkBlast makes it check the amBlast messages it receives.
func checkBlast(it uct.Iface) *blastCheck {
	c := &blastCheck{next: map[int]int{}}
	it.SetAMHandler(amBlast, func(_ any, d []byte, _ uct.AMFlags) {
		if c.bad != nil {
			return
		}
		if len(d) < 8 {
			c.bad = fmt.Errorf("message of %d bytes", len(d))
			return
		}
		hdr := binary.LittleEndian.Uint64(d)
		pid, seq := int(hdr>>32), int(uint32(hdr))
		if seq != c.next[pid] {
			c.bad = fmt.Errorf("sender %d: message %d, want %d", pid, seq, c.next[pid])
			return
		}
		if want := blastPayload(pid, seq); string(d[8:]) != string(want) {
			c.bad = fmt.Errorf("sender %d message %d: payload differs", pid, seq)
			return
		}
		c.next[pid]++
		c.total++
	}, nil)
	return c
}
