package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// claimStop is the "claimstop" child: it claims a cell of the parent's
// FIFO and stops itself (SIGSTOP) before writing it, as a writer stopped
// mid-send. Once continued it writes and publishes the cell ("late"),
// sends one more message ("after") and serves as "echo".
func claimStop(ep *Endpoint) error {
	t, ok := ep.tx.reserve(ep.it.me)
	if !ok {
		return fmt.Errorf("parent FIFO full")
	}
	if err := stopSelf(); err != nil {
		return err
	}
	c := ep.tx.cell(t)
	late := []byte("late")
	copy(c[cellHdr:], late)
	ep.sealCell(c, len(late), amEcho)
	ep.tx.publish(t)
	for {
		_, err := ep.AMBcopy(amEcho, []byte("after"), nil)
		if err == nil {
			return nil
		}
		if err != uct.ErrNoResource {
			return err
		}
	}
}

// stopSelf stops this process (SIGSTOP) and returns once it is
// continued. The signal goes to the calling thread, which stops on its
// way back from the system call: a stop sent to the process is taken by
// whichever thread the kernel picks, and the caller runs on until that
// thread is scheduled, which on a busy machine can be long after.
func stopSelf() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP)
}

// procState is the state letter of /proc/PID/stat ('T': stopped).
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// A writer stopped (SIGSTOP) between claiming our head cell and
// publishing it is alive, so its cell is neither skipped nor reused; but
// it must not stop the messages of a healthy writer behind it. The
// receiver delivers the healthy writer's messages around the held cell,
// in that writer's order, and reports the hold (HeldFIFO). Once the
// stopped writer continues, its cell is delivered, then its next
// message, each once.
func TestStallStoppedWriter(t *testing.T) {
	_, it := openIface(t)
	self := it.(*Iface)
	var got []string
	it.SetAMHandler(amEcho, func(_ any, d []byte, _ uct.AMFlags) { got = append(got, string(d)) }, nil)
	it.SetErrorHandler(func(any, uct.Endpoint, error) {}, nil)
	other := startChild(t, "echo")
	epO := other.connect(t, it)
	stop := startChild(t, "claimstop")
	epS := stop.connect(t, it)
	pid := stop.cmd.Process.Pid
	deadline := time.Now().Add(20 * time.Second)
	for self.rx.stuckOwner(self.head) != pid || procState(pid) != 'T' {
		if time.Now().After(deadline) {
			t.Fatalf("the child never held our head cell stopped (owner %d, state %q)", self.rx.stuckOwner(self.head), procState(pid))
		}
		time.Sleep(time.Millisecond)
	}
	held := self.head

	n := 40 // fewer than the FIFO's cells: they fit around the held one
	var want []string
	for i := 0; i < n; i++ {
		m := fmt.Sprintf("healthy %d", i)
		want = append(want, m)
		sendRetry(t, it, func() error { _, err := epO.AMBcopy(amEcho, []byte(m), nil); return err })
	}
	progressUntil(t, it, "the healthy writer's echoes behind the stopped writer's cell", func() bool { return len(got) >= n })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	h := self.HeldFIFO()
	if h.Writer != pid || h.Holds != 1 || h.Around != uint64(n) || h.Since.IsZero() {
		t.Fatalf("HeldFIFO %+v, want writer %d, 1 hold, %d messages around it", h, pid, n)
	}
	if self.head != held {
		t.Fatalf("head moved from the held cell %d to %d", held, self.head)
	}
	if err := epS.CheckLiveness(nil); err != nil {
		t.Fatalf("the stopped writer's endpoint: %v, want alive", err)
	}
	if h.Full {
		t.Fatalf("HeldFIFO %+v: full after %d of %d cells", h, n+1, self.rx.cells)
	}
	// a writer of this process uses up the rest of the lap: the held
	// cell and the n delivered around it are not handed back
	_, local := openIface(t)
	uep, err := local.Connect(it.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	fill := 0
	for ; fill <= self.rx.cells; fill++ {
		if err := uep.AMShort(amEcho, uint64(fill), nil); err != nil {
			if !errors.Is(err, uct.ErrNoResource) {
				t.Fatal(err)
			}
			break
		}
	}
	if room := self.rx.cells - 1 - n; fill != room || !self.HeldFIFO().Full {
		t.Fatalf("%d sends fit, full %v; want %d and full", fill, self.HeldFIFO().Full, room)
	}
	progressUntil(t, it, "the local writer's messages around the held cell", func() bool { return len(got) >= n+fill })
	for i := 0; i < fill; i++ {
		want = append(want, string(binary.LittleEndian.AppendUint64(nil, uint64(i))))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	n += fill

	if err := stop.cmd.Process.Signal(unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	progressUntil(t, it, "the continued writer's cell and its next message", func() bool { return len(got) >= n+2 })
	if got[n] != "late" || got[n+1] != "after" {
		t.Fatalf("after continuing: %q, want its held cell, then its next message", got[n:])
	}
	if h := self.HeldFIFO(); h.Writer != 0 || h.Holds != 1 {
		t.Fatalf("HeldFIFO %+v once the writer published, want no writer holding", h)
	}
	// the ring goes on in order past the cells delivered around the head
	sendRetry(t, it, func() error { _, err := epO.AMBcopy(amEcho, []byte("last"), nil); return err })
	progressUntil(t, it, "a message after the hold", func() bool { return len(got) >= n+3 })
	if len(got) != n+3 || got[n+2] != "last" {
		t.Fatalf("delivered %d messages, the last %q; want %d, \"last\"", len(got), got[len(got)-1], n+3)
	}
	if self.head != held+uint64(n)+3 {
		t.Fatalf("head %d, want %d", self.head, held+uint64(n)+3)
	}
	quitChild(t, it, epS, stop)
	quitChild(t, it, epO, other)
}

// A live writer holding the head (claimhang: claimed, sleeping) has the
// healthy writer's messages delivered around its cell; when it is then
// SIGKILLed, its cell is skipped, the head steps over the cells already
// delivered, and what follows arrives once, in order.
func TestStallHolderKilled(t *testing.T) {
	r := newClaimedHead(t)
	held := r.self.head
	for i := 0; i < 5; i++ {
		m := fmt.Sprintf("around %d", i)
		sendRetry(t, r.it, func() error { _, err := r.epO.AMBcopy(amEcho, []byte(m), nil); return err })
	}
	progressUntil(t, r.it, "messages around the held cell", func() bool { return len(r.got) >= 5 })
	if h := r.self.HeldFIFO(); h.Writer != r.hang.cmd.Process.Pid || h.Around != 5 {
		t.Fatalf("HeldFIFO %+v, want the sleeping writer holding, 5 around", h)
	}
	if err := r.hang.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	progressUntil(t, r.it, "the dead holder's cell skipped", func() bool { return r.self.head == held+6 })
	for i := 5; i < 8; i++ {
		m := fmt.Sprintf("after %d", i)
		sendRetry(t, r.it, func() error { _, err := r.epO.AMBcopy(amEcho, []byte(m), nil); return err })
	}
	progressUntil(t, r.it, "messages after the skip", func() bool { return len(r.got) >= 8 })
	want := "[around 0 around 1 around 2 around 3 around 4 after 5 after 6 after 7]"
	var got []string
	for _, b := range r.got {
		got = append(got, string(b))
	}
	if fmt.Sprint(got) != want || r.self.head != held+9 {
		t.Fatalf("delivered %q, head %d; want %s, head %d", got, r.self.head, want, held+9)
	}
	if h := r.self.HeldFIFO(); h.Writer != 0 || h.Holds != 1 || r.self.hold.ahead != 0 {
		t.Fatalf("HeldFIFO %+v (%d rounds ahead), want no holder, 1 hold, none ahead", h, r.self.hold.ahead)
	}
	quitChild(t, r.it, r.epO, r.other)
}
