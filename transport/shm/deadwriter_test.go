package shm

import "testing"

// A writer that publishes its cell and exits between the receiver's look
// at the head cell and the answer that the writer is gone must have its
// message delivered, once, and the ring must go on. A child claims our
// head cell and is SIGKILLed; the receiver's dead-writer check learns that
// it is gone, and at that moment (deadWriterSeen) the test publishes the
// cell as the writer would have just before it died.
func TestWriterPublishedThenDied(t *testing.T) {
	r := newClaimedHead(t)
	it, self := r.it, r.self
	claimed := self.head
	late := []byte("published just before the writer died")
	hooked := 0
	deadWriterSeen = func(at *Iface, head uint64) {
		if at != self {
			return
		}
		hooked++
		if head != claimed || hooked > 1 {
			t.Errorf("dead writer seen at cell %d (call %d), want cell %d once", head, hooked, claimed)
			return
		}
		c := at.rx.cell(head)
		copy(c[cellHdr:], late)
		*u32at(c, 8) = uint32(len(late))
		c[12] = amEcho
		*u64at(c, cellSrc) = uint64(r.hang.cmd.Process.Pid) << 32
		at.rx.publish(head)
	}
	t.Cleanup(func() { deadWriterSeen = nil })
	if err := r.hang.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}

	progressUntil(t, it, "the dead writer's published message", func() bool { return len(r.got) > 0 })
	if hooked != 1 {
		t.Fatalf("the dead-writer check ran %d times, want 1", hooked)
	}
	sendRetry(t, it, func() error { return r.epO.AMShort(amEcho, 42, []byte("behind")) })
	progressUntil(t, it, "a message behind the dead writer's cell", func() bool { return len(r.got) > 1 })
	if len(r.got) != 2 || string(r.got[0]) != string(late) || r.got[1][0] != 42 || string(r.got[1][8:]) != "behind" {
		t.Fatalf("delivered %q, want the dead writer's message once, then the other peer's", r.got)
	}
	if self.head != claimed+2 || self.rx.stuckOwner(self.head) != 0 {
		t.Fatalf("head %d (stuck owner %d), want %d and not stuck", self.head, self.rx.stuckOwner(self.head), claimed+2)
	}
	quitChild(t, it, r.epO, r.other)
	if len(r.got) != 2 {
		t.Fatalf("delivered %d messages by the end, want 2", len(r.got))
	}
}
