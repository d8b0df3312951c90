package ucttest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// recv collects active messages on B.
type recv struct {
	mu   sync.Mutex
	msgs [][]byte
	args []any
}

func (r *recv) handler(arg any, data []byte, _ uct.AMFlags) {
	r.mu.Lock()
	r.msgs = append(r.msgs, append([]byte(nil), data...))
	r.args = append(r.args, arg)
	r.mu.Unlock()
}

func (r *recv) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func (r *recv) get(i int) ([]byte, any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[i], r.args[i]
}

func (h *Harness) setAM(id uint8, arg any) *recv {
	h.T.Helper()
	r := &recv{}
	if err := h.P.B.SetAMHandler(id, r.handler, arg); err != nil {
		h.T.Fatalf("SetAMHandler(%d): %v", id, err)
	}
	return r
}

func sizesUpTo(max int) []int {
	var s []int
	for _, n := range []int{0, 1, 7, 8, 63, 64, 255, 1000, 4096, 65536, 1 << 20} {
		if n < max {
			s = append(s, n)
		}
	}
	if max >= 0 {
		s = append(s, max)
	}
	return s
}

type amArg struct{ name string }

func testAMShort(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMShort, "AM short")
	arg := &amArg{"short"}
	r := h.setAM(3, arg)
	sizes := sizesUpTo(h.AttrA.AMMaxShort)
	for i, n := range sizes {
		hdr := uint64(0x1122334455667700) + uint64(i)
		p := pattern(n, byte(i))
		h.Must(fmt.Sprintf("AMShort %d bytes", n), func(*uct.Completion) error { return h.EP.AMShort(3, hdr, p) })
		h.Until(fmt.Sprintf("AMShort %d bytes arrives", n), func() bool { return r.n() > i })
		got, a := r.get(i)
		if a != arg {
			t.Errorf("AMShort %d: handler arg %v, want %v", n, a, arg)
		}
		if len(got) != 8+n {
			t.Fatalf("AMShort %d: handler got %d bytes, want 8+%d", n, len(got), n)
		}
		if g := binary.LittleEndian.Uint64(got); g != hdr {
			t.Errorf("AMShort %d: header %#x, want %#x", n, g, hdr)
		}
		if !bytes.Equal(got[8:], p) {
			t.Errorf("AMShort %d: payload differs", n)
		}
	}
	if h.AttrA.AMMaxShort >= 0 {
		big := make([]byte, h.AttrA.AMMaxShort+1)
		err := h.EP.AMShort(3, 0, big)
		if err == nil || errors.Is(err, uct.ErrInProgress) || errors.Is(err, uct.ErrNoResource) {
			t.Errorf("AMShort over AMMaxShort (%d): %v, want an error wrapping ErrInvalidParam", len(big), err)
		} else if !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("AMShort over AMMaxShort: %v does not wrap ErrInvalidParam", err)
		}
	}
}

func testAMBcopy(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	arg := &amArg{"bcopy"}
	r := h.setAM(4, arg)
	max := h.AttrA.AMMaxBcopy
	i := 0
	for _, hl := range []int{0, 8} {
		for _, n := range sizesUpTo(max - hl) {
			hdr := pattern(hl, 0x40+byte(i))
			p := pattern(n, byte(i))
			var sent int
			h.Must(fmt.Sprintf("AMBcopy %d+%d bytes", hl, n), func(*uct.Completion) error {
				var err error
				sent, err = h.EP.AMBcopy(4, hdr, p)
				return err
			})
			if sent != hl+n {
				t.Errorf("AMBcopy %d+%d: returned length %d", hl, n, sent)
			}
			k := i
			h.Until(fmt.Sprintf("AMBcopy %d+%d arrives", hl, n), func() bool { return r.n() > k })
			got, a := r.get(i)
			if a != arg {
				t.Errorf("AMBcopy: handler arg %v, want %v", a, arg)
			}
			if want := append(append([]byte{}, hdr...), p...); !bytes.Equal(got, want) {
				t.Errorf("AMBcopy %d+%d: got %d bytes, content differs", hl, n, len(got))
			}
			i++
		}
	}
	if max >= 0 {
		_, err := h.EP.AMBcopy(4, nil, make([]byte, max+1))
		if !errors.Is(err, uct.ErrInvalidParam) || errors.Is(err, uct.ErrInProgress) {
			t.Errorf("AMBcopy over AMMaxBcopy (%d): %v, want an error wrapping ErrInvalidParam", max+1, err)
		}
	}
}

func testAMZcopy(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMZcopy, "AM zcopy")
	arg := &amArg{"zcopy"}
	r := h.setAM(5, arg)
	maxIOV := h.AttrA.AMMaxIOV
	if maxIOV < 1 {
		maxIOV = 1
	}
	hl := min(h.AttrA.AMMaxHeader, 16)
	i := 0
	for _, n := range sizesUpTo(h.AttrA.AMMaxZcopy - hl) {
		hdr := pattern(hl, 0x80+byte(i))
		p := pattern(n, byte(i))
		// split the payload into up to 3 parts, within AMMaxIOV
		parts := min(3, maxIOV)
		var iov [][]byte
		for j := 0; j < parts; j++ {
			iov = append(iov, p[j*n/parts:(j+1)*n/parts])
		}
		h.Must(fmt.Sprintf("AMZcopy %d+%d bytes", hl, n), func(c *uct.Completion) error {
			return h.EP.AMZcopy(5, hdr, iov, c)
		})
		k := i
		h.Until(fmt.Sprintf("AMZcopy %d+%d arrives", hl, n), func() bool { return r.n() > k })
		got, a := r.get(i)
		if a != arg {
			t.Errorf("AMZcopy: handler arg %v, want %v", a, arg)
		}
		if want := append(append([]byte{}, hdr...), p...); !bytes.Equal(got, want) {
			t.Errorf("AMZcopy %d+%d: got %d bytes, content differs", hl, n, len(got))
		}
		i++
	}
}

func testAMIDs(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy, "AM bcopy")
	ids := []uint8{0, 1, 17, uct.MaxAMID}
	rs := map[uint8]*recv{}
	for _, id := range ids {
		rs[id] = h.setAM(id, id)
	}
	for _, id := range ids {
		h.Must("AMBcopy", func(*uct.Completion) error {
			_, err := h.EP.AMBcopy(id, []byte{id}, nil)
			return err
		})
	}
	h.Until("one message per AM id", func() bool {
		for _, id := range ids {
			if rs[id].n() < 1 {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if rs[id].n() != 1 {
			t.Errorf("AM id %d: %d messages, want 1", id, rs[id].n())
			continue
		}
		got, a := rs[id].get(0)
		if a != id || !bytes.Equal(got, []byte{id}) {
			t.Errorf("AM id %d: got %v with arg %v", id, got, a)
		}
	}
	if err := h.P.B.SetAMHandler(uct.MaxAMID+1, func(any, []byte, uct.AMFlags) {}, nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("SetAMHandler(MaxAMID+1) = %v, want ErrInvalidParam", err)
	}
	// Removing a handler: messages to its id must no longer reach it.
	if err := h.P.B.SetAMHandler(1, nil, nil); err != nil {
		t.Fatalf("SetAMHandler(1, nil): %v", err)
	}
	if err := h.P.B.SetAMHandler(1, rs[17].handler, "again"); err != nil {
		t.Fatalf("SetAMHandler(1, again): %v", err)
	}
	h.Must("AMBcopy", func(*uct.Completion) error { _, err := h.EP.AMBcopy(1, []byte{99}, nil); return err })
	h.Until("message to the replaced handler", func() bool { return rs[17].n() == 2 })
	if _, a := rs[17].get(1); a != "again" {
		t.Errorf("replaced handler got arg %v", a)
	}
	if rs[1].n() != 1 {
		t.Errorf("removed handler got %d messages, want 1", rs[1].n())
	}
}

type pendingAM struct {
	h          *Harness
	id         uint8
	seq        byte
	dispatched int
}

func (p *pendingAM) Dispatch() error {
	p.dispatched++
	_, err := p.h.EP.AMBcopy(p.id, []byte{p.seq}, nil)
	return err
}

func testBackPressure(t *testing.T, h *Harness) {
	h.NeedCap(uct.CapAMBcopy|uct.CapPending, "AM bcopy and pending")
	r := h.setAM(7, nil)
	// Without progress on B, the sender must run out of room.
	sent := 0
	const limit = 1 << 20
	var err error
	for sent < limit {
		if _, err = h.EP.AMBcopy(7, []byte{byte(sent)}, nil); err != nil {
			break
		}
		sent++
	}
	if err == nil {
		t.Skipf("no back-pressure after %d messages without progress", limit)
	}
	if !errors.Is(err, uct.ErrNoResource) {
		t.Fatalf("AMBcopy after %d messages: %v, want ErrNoResource", sent, err)
	}
	// Queue one request per missing slot: they must be dispatched in order
	// as progress frees room.
	var reqs []*pendingAM
	for i := 0; i < 4; i++ {
		p := &pendingAM{h: h, id: 7, seq: byte(sent + i)}
		if err := h.EP.PendingAdd(p); err != nil {
			t.Fatalf("PendingAdd while out of resources: %v", err)
		}
		reqs = append(reqs, p)
	}
	total := sent + len(reqs)
	h.Until("pending requests dispatched and all messages received", func() bool { return r.n() == total })
	for i := 0; i < total; i++ {
		if got, _ := r.get(i); len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("message %d: %v, want [%d] (pending requests go after what was sent)", i, got, byte(i))
		}
	}
	for i, p := range reqs {
		if p.dispatched < 1 {
			t.Errorf("pending request %d: never dispatched", i)
		}
	}
	// Room again: PendingAdd must refuse with ErrBusy.
	h.Until("room to send", func() bool {
		err := h.EP.PendingAdd(&pendingAM{h: h, id: 7})
		if err == nil {
			t.Fatal("PendingAdd with room: queued, want ErrBusy")
		}
		return errors.Is(err, uct.ErrBusy)
	})
	// PendingPurge hands back nothing now.
	h.EP.PendingPurge(func(uct.PendingRequest) { t.Error("PendingPurge returned a request on an empty queue") })
}
