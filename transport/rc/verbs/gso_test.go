package verbs

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/internal/roce"
)

// TestGSOSegmentICRC checks that the packets batched into one UDP GSO
// message carry the ICRCs of the IP IDs the kernel gives the segments:
// 0, 1, 2, ... (seen on the rxe-vm tap: a 4096-byte SEND at MTU 1024 left
// as IP IDs 0-3; rxe dropped segments 1-3 while their ICRCs assumed ID 0).
func TestGSOSegmentICRC(t *testing.T) {
	d := openDev(t, "127.0.0.1")
	if !d.sock.gso {
		t.Skip("no UDP GSO on this kernel: every packet is sent alone with IP ID 0")
	}
	dst := netip.MustParseAddrPort("127.0.0.2:4791")
	payload := bytes.Repeat([]byte{0x7b}, 1024)
	pkts := make([]roce.Packet, 4)
	for k := range pkts {
		p := &pkts[k]
		p.BTH.Opcode = roce.OpSendMiddle
		p.BTH.PKey = 0xffff
		p.BTH.DestQP = 0x11
		p.BTH.PSN = uint32(100 + k)
		p.Payload = payload
	}
	// Copied (emit) and sent by reference (emitRef: the batch holds the
	// headers and trailers, the payloads stay where they are).
	for _, ref := range []bool{false, true} {
		d.mu.Lock()
		for k := range pkts {
			d.emitPacket(&pkts[k], dst, ref)
		}
		n, seg, buf, staged := d.tx.n, d.tx.seg[0], d.tx.message(0), len(d.tx.bufs[0])
		d.tx.n, d.tx.bytes = 0, 0 // drop the batch unsent
		d.tx.dropRefs()
		d.mu.Unlock()
		if n != 1 || len(buf) != len(pkts)*seg {
			t.Fatalf("ref %v: %d messages, %d bytes of %d-byte segments; want one message of %d segments", ref, n, len(buf), seg, len(pkts))
		}
		if copied := staged == len(buf); copied == ref {
			t.Errorf("ref %v: the batch buffer holds %d of the message's %d bytes", ref, staged, len(buf))
		}
		for k := range pkts {
			got := buf[k*seg : (k+1)*seg]
			if want := roce.AppendIPID(nil, &pkts[k], d.LocalAddr(), dst, uint16(k)); !bytes.Equal(got, want) {
				t.Errorf("ref %v: segment %d: ICRC %x, want %x (IP ID %d)", ref, k, got[seg-4:], want[seg-4:], k)
			}
			if err := roce.CheckICRC(got, d.LocalAddr(), dst); err != nil {
				t.Errorf("ref %v: segment %d: %v", ref, k, err)
			}
		}
	}
}
