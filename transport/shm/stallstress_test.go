package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// holdRounds is how many times a "claimstops" child stops holding a cell.
const holdRounds = 5

// claimStops is the "claimstops" child: holdRounds times it claims a
// cell of the parent's FIFO, stops itself, and once continued writes and
// publishes message seq in it and sends the next four as usual (blast
// format); then it serves as "echo".
func claimStops(ep *Endpoint, it uct.Iface) error {
	pid := os.Getpid()
	seq := 0
	for k := 0; k < holdRounds; k++ {
		deadline := time.Now().Add(2 * time.Minute)
		t, ok := ep.tx.reserve(ep.it.me)
		for ; !ok; t, ok = ep.tx.reserve(ep.it.me) {
			if time.Now().After(deadline) {
				return fmt.Errorf("parent FIFO full for 2 minutes")
			}
			it.Progress()
			runtime.Gosched()
		}
		if err := stopSelf(); err != nil {
			return err
		}
		msg := binary.LittleEndian.AppendUint64(nil, uint64(pid)<<32|uint64(seq))
		msg = append(msg, blastPayload(pid, seq)...)
		c := ep.tx.cell(t)
		if len(msg) <= inlineMax {
			copy(c[cellHdr:], msg)
		} else {
			copy(ep.tx.buf(t), msg)
		}
		ep.sealCell(c, len(msg), amBlast)
		ep.tx.publish(t)
		seq++
		for j := 0; j < 4; j++ {
			if err := sendBlast(ep, it, seq); err != nil {
				return err
			}
			seq++
		}
	}
	return nil
}

// Holds come and go while another process blasts into the FIFO: a child
// stops itself holdRounds times with a cell claimed, and each time the
// receiver delivers a message of a third writer (this process) around
// the held cell before the test continues the child, if the blaster has
// left room in the lap. Every message of
// every writer arrives once, intact and in its writer's order, across
// laps of the ring, and the iface counts one hold per stop.
func TestStallRepeatedHolds(t *testing.T) {
	_, it := openIface(t)
	self := it.(*Iface)
	c := checkBlast(it)
	it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	blaster := startChild(t, "blast")
	epB := blaster.connect(t, it)
	stopper := startChild(t, "claimstops")
	epS := stopper.connect(t, it)
	_, local := openIface(t)
	uep, err := local.Connect(it.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	lep := uep.(*Endpoint)
	pid, me := stopper.cmd.Process.Pid, os.Getpid()

	deadline := time.Now().Add(3 * time.Minute)
	conts, polls, ours := 0, 0, 0
	for c.total < blastCount+holdRounds*5+ours && c.bad == nil {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d messages in 3 minutes (%d continues, %+v)", c.total, blastCount+holdRounds*5+ours, conts, self.HeldFIFO())
		}
		if it.Progress() != 0 {
			continue
		}
		if polls++; polls%256 != 0 || conts == holdRounds {
			continue
		}
		h := self.HeldFIFO()
		if h.Writer != pid || procState(pid) != 'T' {
			continue
		}
		// a message of ours goes around the held cell before the holder
		// goes on, unless the blaster has used up the lap
		seq := c.next[me]
		hdr := uint64(me)<<32 | uint64(seq)
		if _, err := lep.AMBcopy(amBlast, binary.LittleEndian.AppendUint64(nil, hdr), blastPayload(me, seq)); err == nil {
			progressUntil(t, it, "our message around the held cell", func() bool { return c.next[me] > seq || c.bad != nil })
			ours++
		} else if !errors.Is(err, uct.ErrNoResource) {
			t.Fatal(err)
		}
		if err := stopper.cmd.Process.Signal(unix.SIGCONT); err != nil {
			t.Fatal(err)
		}
		conts++
	}
	if c.bad != nil {
		t.Fatal(c.bad)
	}
	h := self.HeldFIFO()
	if conts != holdRounds || h.Holds != holdRounds || h.Around < uint64(ours) || self.hold.ahead != 0 {
		t.Fatalf("%d continues, HeldFIFO %+v, %d rounds marked ahead; want %d holds, at least %d around, none ahead",
			conts, h, self.hold.ahead, holdRounds, ours)
	}
	t.Logf("%d holds; %d messages around them, %d of them ours", h.Holds, h.Around, ours)
	if c.next[me] != ours || c.next[pid] != holdRounds*5 || c.next[blaster.cmd.Process.Pid] != blastCount {
		t.Fatalf("received %v", c.next)
	}
	quitChild(t, it, epS, stopper)
	quitChild(t, it, epB, blaster)
}
